// `webhook-inbox send` against the app served on a local port: duplicates are answered as such, the
// summary counts them, and what it says when nothing was accepted. Every sender's signature being
// accepted is send-every-sender.test.ts.
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { providerRows } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const secret = 'send-test-acme-secret';
const env = { ACME_WEBHOOK_SECRET: secret };
const test = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [secret] }) });
test.setNow(Date.now());
const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
const origin = await new Promise<string>((resolve) =>
  server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
);
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const send = (args: string[], extraEnv: Record<string, string> = env) => runCli(['send', ...args], extraEnv);

describe('send', () => {
  it('signs acme events, delivers duplicates, and summarises the answers', async () => {
    const result = await send([
      'acme',
      '--url',
      `${origin}/webhooks/acme`,
      '--count',
      '3',
      '--duplicates',
      '1',
      '--json',
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.output)).toMatchObject({
      events: 3,
      deliveries: 6,
      answers: { '200': 3, '200 duplicate': 3 },
    });
    const rows = await providerRows(sql, 'acme');
    expect(rows).toHaveLength(3);
    expect(rows.every((row) => row.status === 'completed')).toBe(true);
  });

  it('accepted by nothing: exit 1 with the URL and what the answers suggest', async () => {
    // A port nobody listens on: a server opened and closed again.
    const closed = serve({ fetch: () => new Response(null), port: 0, hostname: '127.0.0.1' });
    const port = await new Promise<number>((resolve) =>
      closed.once('listening', () => resolve((closed.address() as AddressInfo).port)),
    );
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = `http://127.0.0.1:${port}/webhooks/acme`;
    const nobody = await send(['acme', '--url', unreachable]);
    expect(nobody.code).toBe(1);
    expect(nobody.output).toContain(`to ${unreachable} in`);
    expect(nobody.output).toContain(
      `connection refused at ${unreachable}: nothing listens there; is the service running? (npm start, or --url)`,
    );

    const before = (await providerRows(sql, 'acme')).length;
    const wrongSecret = await send(['acme', '--url', `${origin}/webhooks/acme`, '--count', '2'], {
      ...env,
      ACME_WEBHOOK_SECRET: 'not-the-servers-secret',
    });
    expect(wrongSecret.code).toBe(1);
    expect(wrongSecret.output).toContain('401 x2');
    expect(wrongSecret.output).toContain('refused the signatures (401): the secret here (ACME_WEBHOOK_SECRET)');
    expect((await providerRows(sql, 'acme')).length).toBe(before);
  });

  it('sends a file as it is; a missing secret exits 1, bad options exit 2', async () => {
    const event = acmeEvent({ created: Math.floor(Date.now() / 1000) });
    const file = join(tmpdir(), `send-${event.id}.json`);
    writeFileSync(file, JSON.stringify(event));
    const result = await send(['acme', '--url', `${origin}/webhooks/acme`, '--file', file, '--count', '2']);
    expect(result.code).toBe(0);
    expect(result.output).toContain('200 x1, 200 duplicate x1');
    expect((await providerRows(sql, 'acme')).some((row) => row.event_id === event.id)).toBe(true);

    expect((await send(['acme', '--url', `${origin}/webhooks/acme`], {})).code).toBe(1);
    expect((await send(['acme', '--url', 'ftp://example'])).code).toBe(2);
    expect((await send(['nobody', '--url', origin])).code).toBe(2);
    expect((await send(['acme', '--url', origin, '--file', file, '--type', 'x'])).code).toBe(2);
    expect((await send(['--help'], {})).code).toBe(0);
  });
});
