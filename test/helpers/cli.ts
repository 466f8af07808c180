// The operator CLI as the tests run it: `bin/webhook-inbox.js` as a real process with exactly the
// environment given (plus PATH and HOME), logs silenced, its exit code and everything it printed.
import { cleanEnv, run } from './process.ts';

export async function runCli(args: readonly string[], env: Record<string, string>) {
  const child = run(process.execPath, ['bin/webhook-inbox.js', ...args], cleanEnv({ LOG_LEVEL: 'silent', ...env }));
  const { code } = await child.exited;
  return { code, output: child.output() };
}
