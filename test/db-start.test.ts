// `npm run db:start` as a real process: the embedded server in DATA_DIR, migrated, its URL and the
// wrangler line printed, stopped cleanly on Ctrl-C.
// Needs a process: `npm run db:start` runs the embedded server in the foreground and stops it on a signal.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { expectedMigration } from '../src/db/migrations.ts';
import { cleanEnv, run } from './helpers/process.ts';

// The script itself, without npm in between, so SIGINT reaches it as Ctrl-C would.
const script = (JSON.parse(readFileSync('package.json', 'utf8')).scripts['db:start'] as string).split(' ');
const dbStart = (env: Record<string, string>) =>
  run(process.execPath, script.slice(script[0] === 'node' ? 1 : 0), cleanEnv(env));

const dataDir = await mkdtemp(join(tmpdir(), 'webhook-inbox-db-start-'));
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe('npm run db:start', () => {
  it('serves a migrated embedded database until Ctrl-C, printing how to point the Worker at it', async () => {
    const server = dbStart({ DATA_DIR: dataDir });
    try {
      const url = (await server.waitForLine(/^DATABASE_URL=/)).slice('DATABASE_URL='.length);
      const hyperdriveLine = await server.waitForLine(/CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE=/);
      expect(hyperdriveLine).toContain(`'${url}' npm run dev:worker -- --var ACME_WEBHOOK_SECRET:`);
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const [applied] = await sql<{ created_at: string }[]>`
          select max(created_at)::text as created_at from drizzle.__drizzle_migrations`;
        expect(Number(applied?.created_at)).toBe(expectedMigration.createdAt);
      } finally {
        await sql.end();
      }
    } finally {
      server.child.kill('SIGINT');
    }
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it('offers no development secret when a public key alone configures a sender, as npm start would not', async () => {
    const server = dbStart({ DATA_DIR: dataDir, DISCORD_WEBHOOK_PUBLIC_KEY: 'ab'.repeat(32) });
    try {
      const hyperdriveLine = await server.waitForLine(
        /CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE=/,
        60_000,
      );
      expect(hyperdriveLine).toMatch(/npm run dev:worker$/);
      expect(server.output()).not.toContain('ACME_WEBHOOK_SECRET');
    } finally {
      server.child.kill('SIGINT');
    }
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it('refuses to run beside DATABASE_URL, which already names the database', async () => {
    const refused = dbStart({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect((await refused.exited).code).toBe(1);
    expect(refused.output()).toContain('DATABASE_URL');
  });
});
