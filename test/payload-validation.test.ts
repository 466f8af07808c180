// A valid signature over an invalid payload: 400 with the same body every time, and no row, no
// state, whatever the defect (schema, JSON, encoding, nesting, values jsonb cannot hold).
import { describe, expect, it } from 'vitest';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db);

async function postSigned(body: string | Uint8Array) {
  return test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
}

const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { next: nested(depth - 1) });

const schemaViolations: Array<[string, Record<string, unknown>]> = [
  ['id missing', { id: undefined }],
  ['id empty', { id: '' }],
  ['id over 255 characters', { id: 'e'.repeat(256) }],
  ['id a number', { id: 42 }],
  ['type missing', { type: undefined }],
  ['type not a string', { type: ['subscription.updated'] }],
  ['api_version missing', { api_version: undefined }],
  ['created a string', { created: '1764460800' }],
  ['version negative', { version: -1 }],
  ['version fractional', { version: 1.5 }],
  ['version beyond 2^53', { version: 2 ** 53 + 2 }],
  ['data missing', { data: undefined }],
  ['data an array', { data: [] }],
  ['data null', { data: null }],
  ['data.id missing on a handled type', { data: { status: 'active' } }],
  ['data.id over 255 characters', { data: { id: 's'.repeat(256), status: 'active' } }],
  ['data.status not a known status', { data: { id: 'sub_1', status: 'paused' } }],
  ['data.status not a string', { data: { id: 'sub_1', status: 1 } }],
  ['nesting deeper than 32 levels', { data: { id: 'sub_1', status: 'active', deep: nested(40) } }],
  ['a NUL character in a string', { data: { id: 'sub_1', status: 'active', note: 'a\u0000b' } }],
  ['a NUL character in a key', { data: { id: 'sub_1', status: 'active', 'a\u0000b': 1 } }],
  ['a lone surrogate', { data: { id: 'sub_1', status: 'active', note: '\ud800' } }],
];

const malformedBodies: Array<[string, string | Uint8Array]> = [
  ['not JSON', 'this is not json'],
  ['truncated JSON', '{"id":"evt_1","type":'],
  ['a JSON array', '[1,2,3]'],
  ['a JSON string', '"evt_1"'],
  ['empty body', ''],
  ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
];

describe('payload validation after a valid signature', () => {
  it.each(schemaViolations)('%s -> 400, no row', async (_name, override) => {
    const event = { ...acmeEvent(), ...override };
    const before = await countEvents(sql);
    const response = await postSigned(JSON.stringify(event));
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql)).toBe(before);
  });

  it.each(malformedBodies)('%s -> 400, no row', async (_name, body) => {
    const before = await countEvents(sql);
    const response = await postSigned(body);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql)).toBe(before);
  });

  it('accepts nesting up to the bound and data of any shape on unhandled types', async () => {
    const deepButFine = acmeEvent({ data: { id: uniqueId('sub'), status: 'active', deep: nested(25) } });
    expect((await postSigned(JSON.stringify(deepButFine))).status).toBe(200);
    const unhandled = acmeEvent({ type: 'customer.note', data: { text: 'free form', tags: ['a'] } });
    expect((await postSigned(JSON.stringify(unhandled))).status).toBe(200);
  });

  it('stores __proto__ and constructor keys as plain data', async () => {
    const body = `{"id":"${uniqueId('evt')}","type":"customer.note","api_version":"2024-06-01","created":1,"version":1,"data":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}`;
    const response = await postSigned(body);
    expect(response.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const [row] = await sql<{ payload: { data: Record<string, unknown> } }[]>`
      select payload from webhook_events where payload->'data' ? '__proto__'`;
    expect(Object.keys(row?.payload.data ?? {})).toEqual(['__proto__', 'constructor']);
  });
});
