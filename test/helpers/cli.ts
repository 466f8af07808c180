// The operator CLI as the tests run it: `bin/webhook-inbox.js` as a real process with exactly the
// environment given (plus PATH and HOME), logs silenced, its exit code and everything it printed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, run } from './process.ts';

/**
 * An empty DATA_DIR unless the test names one: the CLI looks for `npm start`'s embedded server there,
 * and one a developer left running in the checkout's `.data` must not answer for the test.
 */
const emptyDataDir = mkdtempSync(join(tmpdir(), 'webhook-inbox-cli-'));

export async function runCli(args: readonly string[], env: Record<string, string>) {
  const child = run(
    process.execPath,
    ['bin/webhook-inbox.js', ...args],
    cleanEnv({ LOG_LEVEL: 'silent', DATA_DIR: emptyDataDir, ...env }),
  );
  const { code } = await child.exited;
  return { code, output: child.output() };
}
