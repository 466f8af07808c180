// The replay flood's sender, on a thread of its own (started by bench/lib/replay-flood.ts): says
// `ready` once loaded, then, when told, sends the captured delivery at its rate for its seconds and
// posts back each answer's status and latency.
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { openLoop } from './open-loop.ts';

interface ReplayOrder {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
  perSecond: number;
  seconds: number;
}

const order = workerData as ReplayOrder;
const pool = new Pool(order.origin, { connections: 64 });
const captured = { path: order.path, headers: order.headers, body: Buffer.from(order.body) };
// Loaded and ready: the flood starts when told, so the thread's start-up is not timed with it.
parentPort?.once('message', async () => {
  try {
    parentPort?.postMessage(await openLoop(pool, order.perSecond, order.seconds, () => captured));
  } finally {
    await pool.close();
  }
});
parentPort?.postMessage('ready');
