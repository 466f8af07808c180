// Inside workerd: with OUTBOX_TARGET_URL unset, the cron trigger's drain sends pending outbox
// messages through the OUTBOX_QUEUE producer binding (wrangler.toml), and a real consumer Worker on
// that queue (test/worker-pool.ts) receives each message's contract body once; a message too large
// for a queue goes dead at once without holding back the others; a drain's sends are split within
// the queue's batch limits. A broker URL is refused.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, expect, it, vi } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { contractBody, insertMessages, outboxRows } from '../helpers/outbox.ts';
import { WAIT_MS } from '../helpers/patience.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

const sinkUrl = (env as Env & { OUTBOX_TARGET_URL: string }).OUTBOX_TARGET_URL;

interface Received {
  path: string;
  idempotencyKey: string;
  body: string;
}

/** What the consumer Worker handed to the sink for these keys, once it has all of them (or WAIT_MS). */
async function consumedFor(keys: ReadonlySet<string>): Promise<Received[]> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const received = (await (await fetch(new URL('/received', sinkUrl))).json()) as Received[];
    const ours = received.filter((message) => keys.has(message.idempotencyKey));
    if (new Set(ours.map((message) => message.idempotencyKey)).size === keys.size || Date.now() > deadline) return ours;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * One cron run with OUTBOX_TARGET_URL unset (an empty variable counts as unset): the queue binding
 * becomes the target. A new env object is a new set of bindings, so its configuration is read afresh.
 */
async function cronWithoutTarget(): Promise<void> {
  const queueEnv = { ...env, OUTBOX_TARGET_URL: '' };
  const ctx = createExecutionContext();
  worker.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), queueEnv, ctx);
  await waitOnExecutionContext(ctx);
}

it('the cron publishes to OUTBOX_QUEUE when no target URL is set, and the consumer gets each message once', async () => {
  const ids = await insertMessages(sql, 150, { payload: { external_id: 'sub_q', status: 'active' } });
  const [tooLarge] = await insertMessages(sql, 1, { payload: { blob: 'x'.repeat(130 * 1024) } });

  await cronWithoutTarget();

  const rows = await outboxRows(sql, ids);
  for (const row of rows) expect(row).toMatchObject({ status: 'published', attempts: 0, last_error: null });
  const [large] = await outboxRows(sql, [tooLarge as string]);
  expect(large).toMatchObject({ status: 'dead', attempts: 1 });
  expect(large?.last_error).toMatch(/^queues: the message is \d+ bytes; a queue message holds at most 128 KB$/);

  const consumed = await consumedFor(new Set(rows.map((row) => row.deduplication_key)));
  expect(consumed).toHaveLength(150);
  const byKey = new Map(consumed.map((message) => [message.idempotencyKey, message]));
  for (const row of rows) {
    const message = byKey.get(row.deduplication_key);
    expect(message?.path).toBe('/queue');
    expect(JSON.parse(message?.body ?? '{}')).toEqual(contractBody(row));
  }
});

it('splits what a drain sends into batches the queue accepts (at most 256 KB each)', async () => {
  // 30 messages of about 20 KB: 600 KB in all, more than two sendBatch calls may carry.
  const ids = await insertMessages(sql, 30, { payload: { blob: 'y'.repeat(20 * 1024) } });
  await cronWithoutTarget();

  const rows = await outboxRows(sql, ids);
  for (const row of rows) expect(row).toMatchObject({ status: 'published', attempts: 0 });
  const consumed = await consumedFor(new Set(rows.map((row) => row.deduplication_key)));
  expect(new Set(consumed.map((message) => message.idempotencyKey)).size).toBe(30);
});

it('refuses a broker target, which a Worker cannot publish to: 503 and the reason logged', async () => {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  try {
    const bindings = { ...env, OUTBOX_TARGET_URL: 'redis://:hunter2@127.0.0.1:6379?stream=outbox' };
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request('https://inbox.test/healthz'), bindings, ctx);
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(503);
    expect(lines.join('\n')).toContain('OUTBOX_TARGET_URL: redis targets are published by the Node relay');
    expect(lines.join('\n')).not.toContain('hunter2');
  } finally {
    log.mockRestore();
  }
});
