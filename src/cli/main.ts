// The CLI process: runs the program on this process's arguments and environment, then exits with
// the contract's code. Loaded by bin/webhook-inbox.js once tsx is registered.
import { runCli } from './program.ts';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
