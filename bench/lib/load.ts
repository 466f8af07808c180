// The load generator: sends prepared POSTs over an undici Pool (keep-alive HTTP/1.1, no pipelining)
// with a fixed number of requests in flight (optionally paced at a set rate), and records each one's latency and answer.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';

export interface PreparedRequest {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface Rejection {
  index: number;
  /** HTTP status, or 0 when the request failed without an answer. */
  status: number;
  detail: string;
}

export interface LoadResult {
  sent: number;
  accepted: number;
  rejections: Rejection[];
  /** Latency of every request sent, in milliseconds, in completion order. */
  latenciesMs: Float64Array;
  elapsedMs: number;
}

export interface LoadOptions {
  pool: Pool;
  requests: readonly PreparedRequest[];
  concurrency: number;
  /** Whether an answer counts as accepted; by default any 200. */
  accept?: (status: number, body: string) => boolean;
  /** Sees every answer with its latency (a storm tells first deliveries from duplicates by it). */
  onAnswer?: (latencyMs: number, status: number, body: string) => void;
  signal?: AbortSignal;
  /** Open-loop pacing: request i is not sent before i/rate seconds into the run (concurrency still caps it). */
  ratePerSecond?: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { pool, requests, signal } = options;
  const accept = options.accept ?? ((status: number) => status === 200);
  const latenciesMs = new Float64Array(requests.length);
  const rejections: Rejection[] = [];
  let next = 0;
  let sent = 0;
  let accepted = 0;
  const runStarted = performance.now();

  // Each worker keeps exactly one request in flight, so concurrency is exact and independent of
  // how fast the service answers.
  const worker = async () => {
    while (next < requests.length && !signal?.aborted) {
      const index = next++;
      const request = requests[index] as PreparedRequest;
      if (options.ratePerSecond !== undefined) {
        const dueMs = runStarted + (index * 1000) / options.ratePerSecond - performance.now();
        if (dueMs > 0) await sleep(dueMs);
      }
      const started = performance.now();
      let status = 0;
      let body: string;
      try {
        const response = await pool.request({
          method: 'POST',
          path: request.path,
          headers: request.headers,
          body: request.body,
        });
        status = response.statusCode;
        body = await response.body.text();
      } catch (error) {
        body = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      const latencyMs = performance.now() - started;
      latenciesMs[sent++] = latencyMs;
      options.onAnswer?.(latencyMs, status, body);
      if (status !== 0 && accept(status, body)) accepted++;
      else rejections.push({ index, status, detail: body.slice(0, 200) });
    }
  };

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  return {
    sent,
    accepted,
    rejections,
    latenciesMs: latenciesMs.subarray(0, sent),
    elapsedMs: performance.now() - runStarted,
  };
}
