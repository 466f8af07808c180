// The workers project's pool options, computed in Node each time the pool starts a workerd runtime:
// a fresh database copied from the run's migrated template, reached through the Hyperdrive binding,
// so files in different runtimes never share rows; and a consumer Worker for the outbox queue. test/worker-global-setup.ts drops them all.
import { randomBytes } from 'node:crypto';
import type { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import postgres from 'postgres';
import { TEST_SECRET } from './helpers/acme.ts';
import { createDatabase } from './helpers/database.ts';
import { databaseUrl } from './helpers/database-url.ts';

/** The package exports the options' type only through cloudflareTest's signature. */
type PoolOptionsFactory = Extract<Parameters<typeof cloudflareTest>[0], (...args: never[]) => unknown>;
type PoolContext = Parameters<PoolOptionsFactory>[0];
type PoolOptions = Awaited<ReturnType<PoolOptionsFactory>>;

/** Databases made here are named after the run's template, so the teardown can find every one. */
export const workerDatabasePrefix = (template: string) => `${template}_w`;

/** wrangler.toml's producer binding OUTBOX_QUEUE sends to this queue. */
const OUTBOX_QUEUE_NAME = 'webhook-inbox-outbox';

/**
 * A real consumer of the outbox queue, as a second Worker in the same workerd: it takes each batch
 * the queue delivers and hands every message, with its delivery attempt, to the Node-side sink
 * (test/worker-global-setup.ts), acknowledging it once the sink has it.
 */
const OUTBOX_QUEUE_CONSUMER = `
export default {
  async queue(batch, env) {
    for (const message of batch.messages) {
      const answer = await fetch(env.SINK_URL, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': message.body.deduplication_key,
          'queue-attempts': String(message.attempts),
        },
        body: JSON.stringify(message.body),
      });
      if (answer.ok) message.ack(); else message.retry();
    }
  },
};
`;

/** Hyperdrive refuses a connection string without a password, even where the server trusts us. */
function withPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password === '') parsed.password = 'postgres';
  return parsed.toString();
}

export async function workerPoolOptions({ inject }: PoolContext): Promise<PoolOptions> {
  const adminUrl = inject('adminDatabaseUrl');
  const template = inject('templateDatabase');
  const name = `${workerDatabasePrefix(template)}${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await createDatabase(admin, name, template);
  } finally {
    await admin.end();
  }
  return {
    wrangler: { configPath: './wrangler.toml' },
    // Nothing in wrangler.toml is remote; never reach for an account.
    remoteBindings: false,
    miniflare: {
      hyperdrives: { HYPERDRIVE: withPassword(databaseUrl(adminUrl, name)) },
      bindings: {
        ACME_WEBHOOK_SECRET: TEST_SECRET,
        LOG_LEVEL: 'silent',
        // The suite's one timing setting, for the limits test/helpers/patience.ts derives inside workerd
        // (nodejs_compat puts string bindings in process.env).
        ...(process.env.TEST_TIMEOUT_SCALE === undefined ? {} : { TEST_TIMEOUT_SCALE: process.env.TEST_TIMEOUT_SCALE }),
        OUTBOX_TARGET_URL: inject('workerOutboxSinkUrl'),
        // Not an OTEL_* name: the Worker traces only where a test sets OTEL_EXPORTER_OTLP_ENDPOINT to it.
        OTLP_RECEIVER_URL: inject('workerOtlpReceiverUrl'),
      },
      workers: [
        {
          name: 'outbox-queue-consumer',
          modules: true,
          script: OUTBOX_QUEUE_CONSUMER,
          compatibilityDate: '2026-05-01',
          bindings: { SINK_URL: new URL('/queue', inject('workerOutboxSinkUrl')).toString() },
          queueConsumers: { [OUTBOX_QUEUE_NAME]: { maxBatchSize: 100, maxBatchTimeout: 0 } },
        },
      ],
    },
  };
}
