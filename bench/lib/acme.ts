// Signed acme deliveries, built ahead of time so signing costs nothing during a timed phase. Signs
// with node:crypto directly (not the service's code), so a signing bug in the service would show.
import { createHmac } from 'node:crypto';
import type { PreparedRequest } from './load.ts';

export interface AcmeEventOptions {
  secret: string;
  /** Distinguishes this run's ids from any other run against the same database. */
  runId: string;
  index: number;
  nowSeconds: number;
  type?: string;
  /** The subscription it changes (default: one of its own) and the version it carries (default 1). */
  subscription?: string;
  version?: number;
}

export function acmeSignature(secret: string, timestamp: string, body: Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

export function signedAcmeEvent(options: AcmeEventOptions): PreparedRequest {
  const { secret, runId, index, nowSeconds } = options;
  const timestamp = String(nowSeconds);
  const body = Buffer.from(
    JSON.stringify({
      id: `evt_${runId}_${index}`,
      type: options.type ?? 'subscription.updated',
      api_version: '2024-06-01',
      created: nowSeconds,
      version: options.version ?? 1,
      data: { id: options.subscription ?? `sub_${runId}_${index}`, status: 'active' },
    }),
  );
  return {
    path: '/webhooks/acme',
    headers: {
      'content-type': 'application/json',
      'x-acme-timestamp': timestamp,
      'x-acme-signature': acmeSignature(secret, timestamp, body),
    },
    body,
  };
}
