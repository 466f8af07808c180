// The floors bench:floor measures the service against, as servers of their own (PORT, FLOOR_KIND,
// FLOOR_SECRET from the environment). Each answers what the intake answers an accepted acme event,
// and GET /healthz, and does less than the service on purpose:
// - `http`: node:http reads the body and answers. No framework, no check: the load generator's ceiling.
// - `hono`: Hono on @hono/node-server with the checks the service makes before the database: the
//   timestamp tolerance, the Web Crypto HMAC over the raw bytes, JSON parsing and a zod schema of the
//   event. No database, no logging, no metrics: the least any Hono intake with these checks costs.
// Written here rather than taken from src/: a floor that shared the service's code would hide its costs.
import { createServer } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { z } from 'zod';

const ACCEPTED_BODY = '{"received":true}';
const TOLERANCE_SECONDS = 300;

const acmeEvent = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  created: z.number().int(),
  version: z.number().int(),
  data: z.object({ id: z.string().min(1), status: z.string().min(1) }),
});

async function honoFloor(secret: string) {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  const app = new Hono();
  app.get('/healthz', (c) => c.text('ok'));
  app.post('/webhooks/acme', async (c) => {
    const body = new Uint8Array(await c.req.arrayBuffer());
    const timestamp = c.req.header('x-acme-timestamp') ?? '';
    const signature = c.req.header('x-acme-signature') ?? '';
    if (!/^[0-9a-f]{64}$/.test(signature) || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) {
      return c.json({ error: 'unauthorized' }, 401);
    }
    const prefix = encoder.encode(`${timestamp}.`);
    const signed = new Uint8Array(prefix.length + body.length);
    signed.set(prefix);
    signed.set(body, prefix.length);
    if (!(await crypto.subtle.verify('HMAC', key, Buffer.from(signature, 'hex'), signed))) {
      return c.json({ error: 'unauthorized' }, 401);
    }
    const event = acmeEvent.safeParse(JSON.parse(new TextDecoder().decode(body)));
    if (!event.success) return c.json({ error: 'invalid_payload' }, 400);
    return c.body(ACCEPTED_BODY, 200, { 'content-type': 'application/json' });
  });
  return app;
}

const port = Number(process.env.PORT);
const kind = process.env.FLOOR_KIND;
if (kind === 'http') {
  createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(request.method === 'GET' ? 'ok' : ACCEPTED_BODY);
    });
  }).listen(port, '127.0.0.1');
} else if (kind === 'hono') {
  serve({ fetch: (await honoFloor(process.env.FLOOR_SECRET ?? '')).fetch, port, hostname: '127.0.0.1' });
} else {
  throw new Error(`FLOOR_KIND must be http or hono, got ${kind}`);
}
process.on('SIGTERM', () => process.exit(0));
