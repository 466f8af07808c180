// The CLI as an operator meets it next to `npm start`: with nothing configured it finds the embedded
// server running on DATA_DIR (and says how to start one when none runs), `send` signs with the
// development secret `npm start` made, usage errors judge the provider first and list the known
// ones, every result verb speaks JSON on request, stdout carries no log lines unless --verbose, and
// a replay that changes nothing says why. Real processes, real PostgreSQL.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { migrateDatabase } from '../src/db/migrate.ts';
import { startEmbeddedPostgres } from '../src/entry/setup/embedded-postgres.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow, providerRows } from './helpers/facts.ts';
import { operatorActionRows } from './helpers/outbox.ts';

const { sql, db, url } = await useTestDatabase();
const KNOWN = 'acme, standard, stripe, github, shopify, slack';

describe('help, version and usage errors', () => {
  it('--version prints the package version; help fits 80 columns and names DATABASE_URL and DATA_DIR', async () => {
    const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(await runCli(['--version'], {})).toEqual({ code: 0, output: `${manifest.version}\n` });
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.output).toContain('DATABASE_URL');
    expect(help.output).toContain('DATA_DIR');
    expect(help.output).toContain('--verbose');
    const widest = Math.max(...help.output.split('\n').map((line) => line.length));
    expect(widest).toBeLessThanOrEqual(80);
  });

  it('an unknown provider is a usage error (exit 2) listing the known ones, judged before other arguments', async () => {
    for (const args of [
      ['send', 'nobody'],
      ['events', 'list', '--provider', 'nobody'],
      ['events', 'show', 'nobody', 'evt_1'],
      ['replay', 'nobody', 'evt_1'],
    ]) {
      const result = await runCli(args, { DATABASE_URL: url });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.output).toContain(KNOWN);
    }
    const bare = await runCli(['send'], {});
    expect(bare.code).toBe(2);
    expect(bare.output).toContain("missing required argument 'provider'");
    expect(bare.output).not.toContain('--url');
    const noOperator = await runCli(['replay', 'acme', 'evt_1', '--yes'], { DATABASE_URL: url });
    expect(noOperator).toMatchObject({ code: 2 });
    expect(noOperator.output).toContain('--operator NAME is required');
  });
});

describe('replay reports', () => {
  it('says why a replay changed nothing, as text and as JSON, and keeps log lines off unless --verbose', async () => {
    const { eventId } = await insertEvent(sql, { status: 'completed' });
    const quiet = await runCli(['replay', 'acme', eventId, '--operator', 'ann', '--yes'], { DATABASE_URL: url });
    expect(quiet.code).toBe(0);
    expect(quiet.output).toBe(
      `not replayed acme/${eventId}: it was completed: only failed, parked or dead-lettered events are applied ` +
        'again (nothing applied, recorded)\n',
    );

    // A parked event whose schema version is still unknown parks again, and says so.
    const parkedId = `evt_parked_${Date.now()}`;
    const parked = { ...acmeEvent({ id: parkedId }), api_version: '2031-01-01' };
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
      values ('acme', ${parkedId}, ${parked.type}, 'parked', ${sql.json(parked as unknown as postgres.JSONValue)})`;
    const json = await runCli(['replay', 'acme', parkedId, '--operator', 'ann', '--yes', '--json'], {
      DATABASE_URL: url,
    });
    // Nothing was applied: exit 4, as for a replay that fails again.
    expect(json.code).toBe(4);
    expect(JSON.parse(json.output)).toEqual([
      {
        provider: 'acme',
        event_id: parkedId,
        before: 'parked',
        after: 'parked',
        applied: false,
        reason: 'parked again: unknown api_version 2031-01-01 (known: 2024-06-01)',
      },
    ]);
    expect((await eventRow(sql, parkedId))?.status).toBe('parked');
    expect(await operatorActionRows(sql, `acme/${parkedId}`)).toHaveLength(1);

    const verbose = await runCli(['--verbose', 'replay', 'acme', eventId, '--operator', 'ann', '--yes'], {
      DATABASE_URL: url,
      LOG_LEVEL: 'info',
    });
    expect(verbose.output).toContain('"msg":"operator replay"');
    const chatty = await runCli(['replay', 'acme', eventId, '--operator', 'ann', '--yes'], {
      DATABASE_URL: url,
      LOG_LEVEL: 'info',
    });
    expect(chatty.output).not.toContain('"msg"');
  });
});

describe('next to npm start, with nothing configured', () => {
  it('finds the embedded server of DATA_DIR while it runs, and says how to start it when it does not', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'webhook-inbox-cli-'));
    try {
      const none = await runCli(['events', 'list'], { DATA_DIR: dataDir });
      expect(none.code).toBe(1);
      expect(none.output).toContain('DATABASE_URL is not set');
      expect(none.output).toContain(`no embedded PostgreSQL is running with its data in ${dataDir}`);
      expect(none.output).toContain('npm start');

      const embedded = await startEmbeddedPostgres(dataDir);
      try {
        await migrateDatabase(embedded.url);
        const direct = postgres(embedded.url, { max: 1, onnotice: () => {} });
        const { eventId } = await insertEvent(direct, { status: 'failed', lastError: 'ledger down' });
        await direct.end();
        const listed = await runCli(['events', 'list', '--json'], { DATA_DIR: dataDir });
        expect(listed.code).toBe(0);
        expect((JSON.parse(listed.output) as Array<{ event_id: string }>).map((event) => event.event_id)).toEqual([
          eventId,
        ]);
      } finally {
        await embedded.stop();
      }
      const stopped = await runCli(['events', 'list'], { DATA_DIR: dataDir });
      expect(stopped.code).toBe(1);
      expect(stopped.output).toContain('DATABASE_URL is not set');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('send signs with the development secret npm start keeps in DATA_DIR, at PORT by default', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'webhook-inbox-send-'));
    const secret = 'a-development-secret-for-the-test';
    const test = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [secret] }) });
    test.setNow(Date.now());
    const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
    const port = await new Promise<number>((resolve) =>
      server.once('listening', () => resolve((server.address() as AddressInfo).port)),
    );
    try {
      const missing = await runCli(['send', 'acme'], { DATA_DIR: dataDir, PORT: String(port) });
      expect(missing.code).toBe(1);
      expect(missing.output).toContain('ACME_WEBHOOK_SECRET');
      expect(missing.output).toContain(join(dataDir, 'acme-development-secret'));
      const other = await runCli(['send', 'stripe'], { DATA_DIR: dataDir, PORT: String(port) });
      expect(other.code).toBe(1);
      expect(other.output).toContain('set STRIPE_WEBHOOK_SECRET');

      await writeFile(join(dataDir, 'acme-development-secret'), `${secret}\n`);
      const before = (await providerRows(sql, 'acme')).length;
      const sent = await runCli(['send', 'acme', '--count', '2', '--json'], { DATA_DIR: dataDir, PORT: String(port) });
      expect(sent.code).toBe(0);
      expect(JSON.parse(sent.output)).toMatchObject({ provider: 'acme', deliveries: 2, answers: { '200': 2 } });
      expect((await providerRows(sql, 'acme')).length).toBe(before + 2);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
