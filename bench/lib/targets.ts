// What ends a benchmark run in failure: a bench that could not complete (an exception, a wrong answer,
// a lost or double-applied event) always does; a missed speed target only under BENCH_STRICT=1, since
// on a loaded machine a miss says more about the neighbours than about the code. Either way a miss is
// printed as MISSED beside its figure and again at the end.

export const strictTargets = (): boolean => process.env.BENCH_STRICT === '1';

export const targetMark = (met: boolean): string => (met ? 'met' : 'MISSED');

/** Prints the misses and failures; answers whether the run passes. */
export function verdict(failures: readonly string[], misses: readonly string[]): boolean {
  const strict = strictTargets();
  for (const miss of misses) console.error(`MISSED: ${miss}${strict ? ' (BENCH_STRICT=1: fails the run)' : ''}`);
  if (misses.length > 0 && !strict)
    console.error('(missed targets are reported, not failed; BENCH_STRICT=1 fails them)');
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length === 0 && (misses.length === 0 || !strict);
}
