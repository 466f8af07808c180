// The built CLI as `npx webhook-inbox` runs it: bin/webhook-inbox.js loads dist/cli/main.mjs, which
// turns the program's outcome into the process's exit status. Every verb's behaviour is tested
// in-process (test/helpers/cli.ts); this file pins what only the process shows.
// Needs a process: exit statuses and the bundle's start-up are properties of the process itself.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { runCliProcess } from './helpers/cli.ts';
import { useEmptyDatabase } from './helpers/database.ts';

const empty = await useEmptyDatabase();

describe('the built CLI process', () => {
  it('exits with the contract codes: 0 for --version, 2 for a usage error, 1 when it cannot run', async () => {
    const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(await runCliProcess(['--version'], {})).toEqual({ code: 0, output: `${manifest.version}\n` });

    const usage = await runCliProcess(['send', 'nobody'], {});
    expect(usage.code).toBe(2);
    expect(usage.output).toContain('acme');

    const unmigrated = await runCliProcess(['events', 'list'], { DATABASE_URL: empty.url });
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.output).toContain('db:migrate');
  });
});
