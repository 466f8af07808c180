// `npx tsx bench/profile-summary.ts <file.cpuprofile> [limit]`: prints the top self-time functions,
// the top inclusive-time functions and self time per package/file of a node --cpu-prof profile
// (e.g. one written by `BENCH_CPU_PROF=<dir> npm run bench:intake`).
import { summarizeCpuProfile } from './lib/cpuprofile.ts';
import { REPO_ROOT } from './lib/service.ts';

const [file, limitText] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [limit]');
  process.exit(2);
}
const summary = summarizeCpuProfile(file, REPO_ROOT, Number(limitText ?? 25));
const print = (title: string, rows: { name: string; ms: number; share: number }[]) => {
  console.log(`\n${title}`);
  for (const row of rows) {
    console.log(`  ${(row.share * 100).toFixed(1).padStart(5)}%  ${String(row.ms).padStart(7)} ms  ${row.name}`);
  }
};
console.log(
  `profile: ${file}\n${Math.round(summary.totalMs)} ms sampled, ${Math.round(summary.busyMs)} ms busy (shares are of busy time)`,
);
print('self time by package / file', summary.selfByModule);
print('inclusive time by package / file', summary.inclusiveByModule);
print('self time by function', summary.selfByFunction);
print('inclusive time by function', summary.inclusiveByFunction);
