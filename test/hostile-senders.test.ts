// What a sender controls and must not turn against us: the log volume of its mistakes, a dropped
// upload, a slow upload, and connections held open with nothing sent (a real `npm start`).
// Needs a process: slow and malformed clients against the built service over real sockets.

import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { acmeEvent, signedHeaders, TEST_NOW_MS, TEST_SECRET } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow } from './helpers/facts.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { db, sql, url } = await useTestDatabase();

const lines = (logs: string[]) => logs.map((line) => JSON.parse(line) as Record<string, unknown>);

/**
 * The service's request deadline in the slow-upload test: long enough for a busy machine to apply
 * one event once its body is in (the upload itself is not counted, which is what the test shows).
 */
const DEADLINE_MS = patience(3000);
/** The body trickles in over twice the deadline; the whole request is allowed twice that. */
const TRICKLE_MS = 2 * DEADLINE_MS;
const REQUEST_TIMEOUT_MS = 2 * TRICKLE_MS;
const HEADERS_TIMEOUT_MS = 1000;

/** Sends raw HTTP, a piece at a time, and resolves with what came back when the server closed. */
function rawExchange(
  origin: string,
  pieces: Array<{ text: string; afterMs: number }>,
): Promise<{ answer: string; closedAfterMs: number }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(Number(port), hostname);
    let answer = '';
    const timers: NodeJS.Timeout[] = [];
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      for (const timer of timers) clearTimeout(timer);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    socket.on('connect', () => {
      for (const piece of pieces) {
        timers.push(setTimeout(() => socket.writable && socket.write(piece.text), piece.afterMs));
      }
    });
    // Only a hang guard: every exchange here ends when the server closes, which its own timers decide.
    setTimeout(() => reject(new Error('the server kept the connection open')), REQUEST_TIMEOUT_MS + WAIT_MS);
  });
}

describe('a sender that floods us with mistakes', () => {
  it('logs the first ten of each kind a minute, counts every one, then says how many it left out', async () => {
    const test = await buildTestApp(db);
    const body = JSON.stringify(acmeEvent());
    const forged = { ...(await signedHeaders(body)), 'x-acme-signature': '0'.repeat(64) };
    for (let i = 0; i < 50; i += 1) {
      expect((await test.request('/webhooks/acme', { method: 'POST', body, headers: forged })).status).toBe(401);
    }
    const refused = lines(test.logs).filter((line) => line.msg === 'event not accepted');
    expect(refused).toHaveLength(10);
    const metrics = await (await test.request('/metrics', {})).text();
    expect(metrics).toContain('webhook_rejections_total{provider="acme",reason="unauthorized"} 50');

    test.setNow(TEST_NOW_MS + 60_000);
    const later = await signedHeaders(body, { timestamp: (TEST_NOW_MS + 60_000) / 1000 });
    await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { ...later, 'x-acme-signature': '0'.repeat(64) },
    });
    expect(lines(test.logs).find((line) => line.msg === 'rejections not logged')).toMatchObject({
      level: 'warn',
      provider: 'acme',
      outcome: 'unauthorized',
      suppressed: 40,
    });
    expect(lines(test.logs).filter((line) => line.msg === 'event not accepted')).toHaveLength(11);
  });

  it('takes a dropped upload calmly: no error line, nothing stored', async () => {
    const test = await buildTestApp(db);
    const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const event = acmeEvent();
      const body = JSON.stringify(event);
      const headers = Object.entries(await signedHeaders(body)).map(([name, value]) => `${name}: ${value}\r\n`);
      const head = `POST /webhooks/acme HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n${headers.join('')}\r\n`;
      const { hostname, port } = new URL(origin);
      const socket = connect(Number(port), hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      // Dropped once the server has the request (its handler runs from the same event, registered
      // first), not after a guessed pause.
      const requested = new Promise((resolve) => server.once('request', resolve));
      socket.write(head + body.slice(0, 20));
      await requested;
      socket.destroy();
      await expect
        .poll(() => lines(test.logs).some((line) => line.msg === 'delivery abandoned before its body arrived'), {
          timeout: WAIT_MS,
        })
        .toBe(true);
      expect(lines(test.logs).filter((line) => line.level === 'error')).toEqual([]);
      expect(await eventRow(sql, event.id)).toBeUndefined();
    } finally {
      server.close();
    }
  });
});

describe('npm start with bounded client time', () => {
  it('applies a slow upload whose body took longer than the deadline, and closes silent or stalled connections', async () => {
    const service = await startListeningService({
      DATABASE_URL: url,
      ACME_WEBHOOK_SECRET: TEST_SECRET,
      HANDLER_DEADLINE_MS: String(DEADLINE_MS),
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    try {
      const event = acmeEvent({ created: Math.floor(Date.now() / 1000) });
      const body = JSON.stringify(event);
      const signed = await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) });
      const head = `POST /webhooks/acme HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: ${body.length}\r\n${Object.entries(
        signed,
      )
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
      // The body trickles in over twice the deadline, all within the request timeout: the pauses are the
      // subject (a slow sender), and the margins either side are whole deadlines, not a machine's speed.
      const third = Math.ceil(body.length / 3);
      const slow = await rawExchange(service.origin, [
        { text: head + body.slice(0, third), afterMs: 0 },
        { text: body.slice(third, 2 * third), afterMs: TRICKLE_MS / 2 },
        { text: body.slice(2 * third), afterMs: TRICKLE_MS },
      ]);
      expect(slow.answer).toMatch(/^HTTP\/1\.1 200/);
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });

      // Connected, half a request line, then nothing: closed once the headers are overdue, by the
      // headers timeout (1 s) and not the request timeout, which is many seconds further.
      const silent = await rawExchange(service.origin, [{ text: 'POST /webhooks/acme HTTP/1.1\r\n', afterMs: 0 }]);
      expect(silent.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS);
      expect(silent.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS);

      // Headers on time, the body never finishes: 408, nothing stored.
      const stalled = acmeEvent();
      const stalledBody = JSON.stringify(stalled);
      const stalledHead = `POST /webhooks/acme HTTP/1.1\r\nhost: x\r\ncontent-length: ${stalledBody.length}\r\n${Object.entries(
        await signedHeaders(stalledBody),
      )
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
      const cut = await rawExchange(service.origin, [{ text: stalledHead + stalledBody.slice(0, 10), afterMs: 0 }]);
      // The 408 is the request timeout's own answer: the server, not the test's hang guard, ended it.
      expect(cut.answer).toMatch(/^HTTP\/1\.1 408/);
      expect(await eventRow(sql, stalled.id)).toBeUndefined();
      expect(service.output()).not.toContain('"level":"error"');
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });
});
