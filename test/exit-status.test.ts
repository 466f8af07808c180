// The test command's exit status is the verdict: a child `vitest run` with this suite's own global
// setup exits non-zero when a test fails, and zero when all pass, on the embedded server (no
// DATABASE_URL) and on DATABASE_URL's. The embedded server's package once turned every red run
// green by exiting 0 from a `beforeExit` hook.
// Needs a process: `npm test`'s exit status is read from a child vitest run.
import { describe, expect, it } from 'vitest';
import { cleanEnv, run } from './helpers/process.ts';

const CONFIG = 'test/fixtures/exit-status/vitest.config.ts';

async function childRun(file: string, env: Record<string, string>) {
  const child = run(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--config', CONFIG, file],
    cleanEnv({ NO_COLOR: '1', ...env }),
  );
  const { code } = await child.exited;
  return { code, output: child.output() };
}

const databases: Array<[string, Record<string, string>]> = [['the embedded server', {}]];
if (process.env.DATABASE_URL) databases.push(['DATABASE_URL', { DATABASE_URL: process.env.DATABASE_URL }]);

describe.each(databases)('vitest run on %s', (_name, env) => {
  it('exits 1 when a test fails', async () => {
    const { code, output } = await childRun('fails.fixture.ts', env);
    expect(output).toMatch(/Tests\s+1 failed/);
    expect(code).toBe(1);
  });

  it('exits 0 when every test passes', async () => {
    const { code, output } = await childRun('passes.fixture.ts', env);
    expect(output).toMatch(/Tests\s+1 passed/);
    expect(code).toBe(0);
  });
});
