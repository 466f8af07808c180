// How long the suite waits before it calls something hung, from one setting: TEST_TIMEOUT_SCALE
// (default 1) multiplies every limit — vitest's test and hook timeouts, a process's line, a poll for a
// row. Nothing here is a budget a test must beat: each wait ends as soon as its condition holds, and a
// limit only turns a hang into a failure with a message. A slower machine (CI on a busy host, a
// mutation run) raises the scale instead of editing numbers.

/** The multiplier, read once; a value that is not a positive number is refused loudly. */
export const TIMEOUT_SCALE = (() => {
  const raw = process.env.TEST_TIMEOUT_SCALE;
  if (raw === undefined || raw === '') return 1;
  const scale = Number(raw);
  if (!Number.isFinite(scale) || scale <= 0)
    throw new Error(`TEST_TIMEOUT_SCALE must be a positive number, not ${raw}`);
  return scale;
})();

/** A limit of `ms` on a machine as fast as the one the suite was written on, scaled for this one. */
export const patience = (ms: number): number => Math.round(ms * TIMEOUT_SCALE);

/** vitest's per-test limit: long enough for a process-level test on a busy 2-core machine. */
export const TEST_TIMEOUT_MS = patience(120_000);
/** vitest's per-hook limit (a file's database, a service started in beforeAll). */
export const HOOK_TIMEOUT_MS = patience(120_000);
/** The default limit of one wait inside a test: a line from a process, a row to appear. */
export const WAIT_MS = patience(60_000);

/** Resolves once `check` answers true, polling every 50 ms; fails after `timeoutMs` (a hang, not a budget). */
export async function until(check: () => Promise<boolean>, timeoutMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
