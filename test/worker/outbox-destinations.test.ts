// Inside workerd: OUTBOX_DESTINATIONS in the Worker's variables fans a delivery's message out to an
// http destination and a Queues binding destination (`queue:OUTBOX_QUEUE`), each row keyed
// `key@name`; one cron run drains every destination, and each consumer gets its own key once. A
// destination naming a binding the Worker lacks is refused at start-up.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, expect, it, vi } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { acmeEvent, signedHeaders, uniqueId } from '../helpers/acme.ts';
import { WAIT_MS } from '../helpers/patience.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

const sinkUrl = (env as Env & { OUTBOX_TARGET_URL: string }).OUTBOX_TARGET_URL;

interface Received {
  path: string;
  idempotencyKey: string;
}

/** What the sink got for these keys (directly, or through the queue's consumer), once it has all of them (or WAIT_MS). */
async function receivedFor(keys: ReadonlySet<string>): Promise<Received[]> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const received = (await (await fetch(new URL('/received', sinkUrl))).json()) as Received[];
    const ours = received.filter((message) => keys.has(message.idempotencyKey));
    if (new Set(ours.map((message) => message.idempotencyKey)).size === keys.size || Date.now() > deadline) return ours;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A new env object is a new set of bindings: its configuration is read afresh. */
const destinationsEnv = {
  ...env,
  OUTBOX_TARGET_URL: '',
  OUTBOX_DESTINATIONS: JSON.stringify([
    { name: 'edge', url: 'queue:OUTBOX_QUEUE', topics: ['subscription.*'] },
    { name: 'hook', url: sinkUrl, senders: ['acme'] },
    { name: 'billing', url: sinkUrl, senders: ['stripe'] },
  ]),
};

it('a delivery fans out to the matching destinations, and one cron run publishes each with its own key', async () => {
  const now = Math.floor(Date.now() / 1000);
  const event = acmeEvent({ created: now, data: { id: uniqueId('sub'), status: 'active' } });
  const body = JSON.stringify(event);
  const ctx = createExecutionContext();
  const delivered = await worker.fetch(
    new Request('https://inbox.test/webhooks/acme', {
      method: 'POST',
      body,
      headers: await signedHeaders(body, { timestamp: now }),
    }),
    destinationsEnv,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(delivered.status).toBe(200);

  const key = `acme:${event.id}:subscription.changed`;
  const rows = await sql<{ destination: string; deduplication_key: string }[]>`
    select destination, deduplication_key from outbox_messages where deduplication_key like ${`${key}%`} order by 1`;
  expect(rows).toEqual([
    { destination: 'edge', deduplication_key: `${key}@edge` },
    { destination: 'hook', deduplication_key: `${key}@hook` },
  ]);

  const cron = createExecutionContext();
  worker.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), destinationsEnv, cron);
  await waitOnExecutionContext(cron);

  const statuses = await sql<{ status: string }[]>`
    select status::text from outbox_messages where deduplication_key like ${`${key}%`}`;
  expect(statuses.map((row) => row.status)).toEqual(['published', 'published']);
  const received = await receivedFor(new Set([`${key}@edge`, `${key}@hook`]));
  expect(received.map((message) => [message.idempotencyKey, message.path === '/queue']).sort()).toEqual([
    [`${key}@edge`, true],
    [`${key}@hook`, false],
  ]);
});

it('refuses a destination naming a Queues binding the Worker lacks: 503 and the reason logged', async () => {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  try {
    const bindings = { ...env, OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'edge', url: 'queue:NO_SUCH_QUEUE' }]) };
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request('https://inbox.test/healthz'), bindings, ctx);
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(503);
    expect(lines.join('\n')).toContain(
      'OUTBOX_DESTINATIONS (edge).url: no Queues producer binding named NO_SUCH_QUEUE',
    );
  } finally {
    log.mockRestore();
  }
});
