// Signing exact bytes the way an acme sender does, and event factories with ids of their own.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { encodeHex, prefixed } from '../../src/senders/encoding.ts';
import { importHmacKey, signHmac } from '../../src/senders/hmac.ts';

export const TEST_SECRET = 'test-acme-secret-current';
export const PREVIOUS_SECRET = 'test-acme-secret-previous';

/** 2026-01-01T00:00:00Z, the tests' "now" unless a test moves the clock. */
export const TEST_NOW_MS = Date.UTC(2026, 0, 1);
export const TEST_NOW_SECONDS = TEST_NOW_MS / 1000;

/** Signed-time offsets (s) around a 300 s tolerance and the status each must get: the bounds are in. */
export const TOLERANCE_EDGES: ReadonlyArray<readonly [number, 200 | 401]> = [
  [-300, 200],
  [300, 200],
  [-301, 401],
  [301, 401],
];

export function uniqueId(prefix: string): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}

export interface AcmeEventShape {
  id: string;
  type: string;
  api_version: string;
  created: number;
  version: number;
  data: Record<string, unknown>;
  [extra: string]: unknown;
}

export function acmeEvent(overrides: Partial<AcmeEventShape> = {}): AcmeEventShape {
  return {
    id: uniqueId('evt'),
    type: 'subscription.updated',
    api_version: '2024-06-01',
    created: TEST_NOW_SECONDS - 10,
    version: 1,
    data: { id: uniqueId('sub'), status: 'active' },
    ...overrides,
  };
}

export async function signAcme(
  body: Uint8Array | string,
  options: { secret?: string; timestamp?: number | string } = {},
) {
  const timestamp = String(options.timestamp ?? TEST_NOW_SECONDS);
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const key = await importHmacKey(options.secret ?? TEST_SECRET);
  const signature = encodeHex(await signHmac(key, prefixed(`${timestamp}.`, new Uint8Array(bytes))));
  return { timestamp, signature };
}

/** Headers for a signed acme delivery of exactly `body`. */
export async function signedHeaders(
  body: Uint8Array | string,
  options: { secret?: string; timestamp?: number | string } = {},
): Promise<Record<string, string>> {
  const { timestamp, signature } = await signAcme(body, options);
  return { 'content-type': 'application/json', 'x-acme-timestamp': timestamp, 'x-acme-signature': signature };
}

/** POSTs `event` to a running service's acme route, signed with `secret` at `timestamp`. */
export async function deliverAcme(
  origin: string,
  event: AcmeEventShape,
  options: { secret: string; timestamp: number },
): Promise<Response> {
  const body = JSON.stringify(event);
  return fetch(`${origin}/webhooks/acme`, { method: 'POST', body, headers: await signedHeaders(body, options) });
}

export function readFixture(name: string): Buffer {
  return readFileSync(new URL(`../fixtures/${name}`, import.meta.url));
}
