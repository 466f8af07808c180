// The workers project's Node-side fixtures: an HTTP sink for the outbox relay running in workerd
// (its URL becomes the OUTBOX_TARGET_URL binding) and for the outbox queue's consumer Worker
// (test/worker-pool.ts); GET /received lists what it got; an OTLP trace receiver for the Worker's
// spans (the OTLP_RECEIVER_URL binding; GET /received lists what it decoded), and, at the end,
// removal of the databases the project made (test/worker-pool.ts). Listed after test/global-setup.ts,
// so its teardown runs first, while the server and the template still exist.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { listenOtlpReceiver } from './helpers/otlp-receiver.ts';
import { workerDatabasePrefix } from './worker-pool.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    workerOutboxSinkUrl: string;
    workerOtlpReceiverUrl: string;
  }
}

export interface ReceivedMessage {
  /** `/outbox` from the relay's HTTP publisher, `/queue` from the outbox queue's consumer Worker. */
  path: string | undefined;
  idempotencyKey: string | undefined;
  body: string;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const received: ReceivedMessage[] = [];
  const sink = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/received') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const key = req.headers['idempotency-key'];
      received.push({
        path: req.url,
        idempotencyKey: Array.isArray(key) ? key[0] : key,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  project.provide('workerOutboxSinkUrl', `http://127.0.0.1:${(sink.address() as AddressInfo).port}/outbox`);
  const otlpReceiver = await listenOtlpReceiver();
  project.provide('workerOtlpReceiverUrl', otlpReceiver.endpoint);

  return async () => {
    await new Promise((resolve) => sink.close(resolve));
    await otlpReceiver.close();
    const { adminDatabaseUrl, templateDatabase } = project.getProvidedContext();
    const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      const made = await admin<{ datname: string }[]>`select datname from pg_database
        where starts_with(datname, ${workerDatabasePrefix(templateDatabase)})`;
      for (const { datname } of made) await admin.unsafe(`drop database if exists ${datname} with (force)`);
    } finally {
      await admin.end();
    }
  };
}
