// The CLI process: runs the program on this process's arguments and environment, then exits with
// the contract's code. Loaded by bin/webhook-inbox.js once tsx is registered.
import { createInterface } from 'node:readline/promises';
import { runCli } from './program.ts';

/** One question on the terminal; only offered when stdin is one (a script cannot answer). */
async function ask(question: string): Promise<string> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await prompt.question(question);
  } finally {
    prompt.close();
  }
}

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  ...(process.stdin.isTTY ? { ask } : {}),
  errIsTerminal: process.stderr.isTTY === true,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
});
