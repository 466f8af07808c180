// Whom an answer blames decides what the circuit breaker counts (issue 34, decision 0021), against a
// real HTTP sink and real PostgreSQL, time moved through the relays' clocks: a message the target
// refuses (422) dies alone and counts nothing, so a backlog behind refused messages is delivered and
// a half-open probe goes past them; 401/403/404/405 hold every message (no attempt, never dead),
// open the circuit, and the backlog publishes once the target is fixed; a 429 paces the destination
// to its Retry-After (seconds, an HTTP date, or a backoff) without opening the circuit or spending
// attempts; `breaker_cooloff_seconds` is read as seconds.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { relayFor } from '../src/ops/maintenance/drainers.ts';
import { parseDestinations } from '../src/outbox/destinations.ts';
import { nodeDestinationPublishers } from '../src/outbox/publishers/node.ts';
import type { RelayIsolation } from '../src/outbox/relay.ts';
import { closePublishers } from '../src/outbox/relays.ts';
import { uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows, TEST_RELAY_SETTINGS } from './helpers/outbox.ts';
import { type SinkAnswer, startSink } from './helpers/sink.ts';

const { sql, db } = await useTestDatabase();
const sink = await startSink();

afterEach(async () => {
  sink.respond(() => ({ status: 200, body: '{}' }));
  sink.requests.length = 0;
  await sql`delete from outbox_messages`;
  await sql`delete from outbox_destinations`;
});

const COOLOFF_MS = 10_000;
const breaker = (failures: number): RelayIsolation => ({ breaker: { failures, cooloffMs: COOLOFF_MS } });
const OK: SinkAnswer = { status: 200, body: '{}' };
const ms = (date: Date | null | undefined) => date?.getTime();

const countLines = (logs: readonly string[], message: string) =>
  logs.filter((line) => line.includes(`"${message}"`)).length;

async function destinationRow() {
  const [row] = await sql<
    { circuit: string; consecutive_failures: number; opened_at: Date | null; probe_at: Date | null }[]
  >`
    select circuit::text as circuit, consecutive_failures, opened_at, probe_at from outbox_destinations where name = 'default'`;
  return row;
}

/** The sink answers `refusal` to the messages in `refused` and `otherwise` to the rest. */
function refusing(refused: readonly string[], refusal: SinkAnswer, otherwise: () => SinkAnswer = () => OK): void {
  const set = new Set(refused);
  sink.respond((request) => (set.has(request.messageId ?? '') ? refusal : otherwise()));
}

describe('a message the target refuses (its own fault)', () => {
  it('dies alone: 20 refused with 422 ahead of 40 good ones, breaker_failures 5, and all 40 are delivered, the circuit never opened', async () => {
    const refused = await insertMessages(sql, 20, { createdAt: new Date(Date.now() - 120_000) });
    const good = await insertMessages(sql, 40);
    refusing(refused, { status: 422, body: '{"error":"invalid"}' });
    const relay = buildTestRelay(db, { target: sink.url, isolation: breaker(5) });

    // Pass after pass until one claims nothing (a circuit that opened would stop claiming at once).
    for (let pass = 0; pass < 10 && (await relay.relay.drain()).claimed > 0; pass++) relay.advance(1000);

    const goodRows = await outboxRows(sql, good);
    expect(goodRows.every((row) => row.status === 'published' && row.attempts === 0)).toBe(true);
    const refusedRows = await outboxRows(sql, refused);
    expect(refusedRows.map((row) => [row.status, row.attempts, row.last_error])).toEqual(
      refused.map(() => ['dead', 1, 'http 422: {"error":"invalid"}']),
    );
    expect(sink.requests).toHaveLength(60);
    // Nothing was counted against the destination: its row was never opened (nor even written).
    const row = await destinationRow();
    expect(row).toMatchObject({ circuit: 'closed', consecutive_failures: 0, opened_at: null });
    expect(countLines(relay.logs, 'outbox circuit opened')).toBe(0);
  });

  it('counts nothing between failures the destination is to blame for', async () => {
    const ids = await insertMessages(sql, 5);
    const answers: SinkAnswer[] = [{ status: 503 }, { status: 422 }, { status: 410 }, { status: 400 }, { status: 503 }];
    sink.respond((request) => answers[ids.indexOf(request.messageId ?? '')] ?? OK);
    const relay = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 }, isolation: breaker(3) });

    expect(await relay.relay.drain()).toMatchObject({ claimed: 5, retried: 2, dead: 3 });
    expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 2 });
    expect((await outboxRows(sql, ids)).map((row) => row.status)).toEqual([
      'pending',
      'dead',
      'dead',
      'dead',
      'pending',
    ]);
  });

  it('is not a failed probe: the half-open circuit tries the next due message, which closes it', async () => {
    // Two failures open the circuit; then the oldest due messages are refused ones.
    const failing = await insertMessages(sql, 2, { createdAt: new Date(Date.now() - 180_000) });
    const refused = await insertMessages(sql, 3, { createdAt: new Date(Date.now() - 120_000) });
    const good = await insertMessages(sql, 2);
    sink.respond(() => ({ status: 503 }));
    const relay = buildTestRelay(db, {
      target: sink.url,
      settings: { batchSize: 1, batchesInFlight: 1, concurrency: 1 },
      isolation: breaker(2),
    });
    await relay.relay.drain();
    expect(await destinationRow()).toMatchObject({ circuit: 'open' });
    // The failed ones are due again only after the refused ones: a probe meets the refusals first.
    await sql`update outbox_messages set available_at = now() + interval '1 second' where id = any(${failing}::uuid[])`;

    refusing(refused, { status: 422 });
    relay.advance(COOLOFF_MS + 5_000);
    await relay.relay.drain();

    expect(countLines(relay.logs, 'outbox circuit probing')).toBe(1);
    expect(countLines(relay.logs, 'outbox circuit closed')).toBe(1);
    expect(countLines(relay.logs, 'outbox circuit re-opened')).toBe(0);
    expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    expect((await outboxRows(sql, refused)).every((row) => row.status === 'dead')).toBe(true);
    expect((await outboxRows(sql, [...good, ...failing])).every((row) => row.status === 'published')).toBe(true);
  });

  it('does not close a half-open circuit either: a failure after it re-opens the circuit', async () => {
    const [failing] = await insertMessages(sql, 1, { createdAt: new Date(Date.now() - 180_000) });
    const refused = await insertMessages(sql, 1, { createdAt: new Date(Date.now() - 120_000) });
    const others = await insertMessages(sql, 2);
    sink.respond(() => ({ status: 503 }));
    const relay = buildTestRelay(db, {
      target: sink.url,
      settings: { batchSize: 1, batchesInFlight: 1, concurrency: 1 },
      isolation: breaker(1),
    });
    await relay.relay.drain();
    expect(await destinationRow()).toMatchObject({ circuit: 'open', consecutive_failures: 1 });
    await sql`update outbox_messages set available_at = now() + interval '1 day' where id = ${failing ?? ''}`;

    // The probe meets the refused message first: not a success, so the next one's 503 re-opens it.
    refusing(refused, { status: 422 }, () => ({ status: 503 }));
    relay.advance(COOLOFF_MS + 5_000);
    await relay.relay.drain();
    expect(countLines(relay.logs, 'outbox circuit re-opened')).toBe(1);
    expect(countLines(relay.logs, 'outbox circuit closed')).toBe(0);
    expect(await destinationRow()).toMatchObject({ circuit: 'open', consecutive_failures: 2 });
    expect((await outboxRows(sql, [...refused, ...others])).map((row) => [row.status, row.attempts])).toEqual([
      ['dead', 1],
      ['pending', 1],
      ['pending', 0],
    ]);
  });
});

describe.each([401, 403, 404, 405])('a destination answering %i (the destination is wrong)', (status) => {
  it('holds every message (no attempt, never dead), opens the circuit, and publishes the backlog once fixed', async () => {
    const ids = await insertMessages(sql, 6);
    sink.respond(() => ({ status }));
    const relay = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 }, isolation: breaker(3) });

    expect(await relay.relay.drain()).toMatchObject({ claimed: 6, retried: 3, dead: 0, unavailable: 3 });
    expect(await destinationRow()).toMatchObject({ circuit: 'open', consecutive_failures: 3 });
    let rows = await outboxRows(sql, ids);
    expect(rows.every((row) => row.status === 'pending' && row.attempts === 0)).toBe(true);
    // The 3 tried, and the 3 given back unstarted once the breaker tripped: each says why it waits.
    expect(rows.filter((row) => row.last_error === `http ${status}`)).toHaveLength(6);

    // Failed probes, more of them than a message has attempts: each holds its message again.
    for (let probe = 0; probe < TEST_RELAY_SETTINGS.maxAttempts + 1; probe++) {
      relay.advance(COOLOFF_MS * 8);
      expect(await relay.relay.drain()).toMatchObject({ claimed: 1, dead: 0 });
    }
    rows = await outboxRows(sql, ids);
    expect(rows.every((row) => row.status === 'pending' && row.attempts === 0)).toBe(true);

    sink.respond(() => OK);
    relay.advance(COOLOFF_MS * 8);
    expect(await relay.relay.drain()).toMatchObject({ published: 6 });
    expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    rows = await outboxRows(sql, ids);
    expect(rows.every((row) => row.status === 'published' && row.attempts === 0)).toBe(true);
  });
});

describe('a 429 (the target asks for less)', () => {
  it.each([
    ['in seconds', (_nowMs: number) => '5', 5_000],
    ['as an HTTP date', (nowMs: number) => new Date(nowMs + 7_000).toUTCString(), 7_000],
  ])(
    'paces the destination to its Retry-After %s: nothing sooner, the circuit closed, no attempt spent',
    async (_form, retryAfter, waitMs) => {
      // The oldest is on its last attempt: a 429 must not kill it.
      const [last] = await insertMessages(sql, 1, {
        attempts: TEST_RELAY_SETTINGS.maxAttempts - 1,
        createdAt: new Date(Date.now() - 120_000),
      });
      const rest = await insertMessages(sql, 3);
      const relay = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 }, isolation: breaker(1) });
      // Whole seconds: an HTTP date has no milliseconds.
      relay.setNow(Math.floor(relay.now() / 1000) * 1000);
      sink.respond((_request, index) =>
        index === 0 ? { status: 429, headers: { 'retry-after': retryAfter(relay.now()) } } : OK,
      );

      expect(await relay.relay.drain()).toMatchObject({ claimed: 4, published: 0, dead: 0 });
      const pacedUntil = relay.now() + waitMs;
      const rows = await outboxRows(sql, [last ?? '', ...rest]);
      expect(rows[0]).toMatchObject({
        status: 'pending',
        attempts: TEST_RELAY_SETTINGS.maxAttempts - 1,
        last_error: 'http 429',
      });
      expect(rows.every((row) => row.status === 'pending' && ms(row.available_at) === pacedUntil)).toBe(true);
      // A breaker that opens on a single counted failure stayed closed.
      expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
      expect(countLines(relay.logs, 'outbox destination asked to slow down, pacing')).toBe(1);

      relay.advance(waitMs - 1);
      expect(await relay.relay.drain()).toMatchObject({ claimed: 0 });
      expect(sink.requests).toHaveLength(1);

      relay.advance(1);
      expect(await relay.relay.drain()).toMatchObject({ published: 4 });
      expect(sink.requests).toHaveLength(5);
      expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    },
  );

  it('without a Retry-After waits a backoff that grows with the waves of 429s in a row, not with their size', async () => {
    const ids = await insertMessages(sql, 3);
    sink.respond(() => ({ status: 429 }));
    // All three are in flight together: one wave, one request to slow down.
    const relay = buildTestRelay(db, { target: sink.url, isolation: breaker(1) });
    const { baseMs } = TEST_RELAY_SETTINGS.backoff;
    const dueTimes = async () => (await outboxRows(sql, ids)).map((row) => ms(row.available_at));

    await relay.relay.drain();
    // Full jitter at 0.5: half the base after the first wave, half of twice it after the second.
    expect(await dueTimes()).toEqual(ids.map(() => relay.now() + baseMs / 2));
    relay.advance(baseMs / 2);
    await relay.relay.drain();
    expect(await dueTimes()).toEqual(ids.map(() => relay.now() + baseMs));
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'pending' && row.attempts === 0)).toBe(true);
    expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
  });
});

describe('breaker_cooloff_seconds', () => {
  it('is read as seconds: the probe is due that many seconds after the circuit opened', async () => {
    await insertMessages(sql, 3);
    sink.respond(() => ({ status: 503 }));
    const config = parseConfig({
      OUTBOX_DESTINATIONS: JSON.stringify([
        { name: 'alpha', url: sink.url, settings: { breaker_failures: 1, breaker_cooloff_seconds: 2 } },
      ]),
    });
    await sql`update outbox_messages set destination = 'alpha'`;
    let now = Date.now();
    const logger = createLogger({ level: 'silent', now: () => new Date(now), write: () => {} });
    const publishers = nodeDestinationPublishers(parseDestinations(config), {
      clock: () => now,
      logger,
      timeoutMs: 2_000,
    });
    try {
      const relay = relayFor(
        { config, db, clock: () => now, logger, newId: () => uniqueId('relay'), random: () => 0.5 },
        publishers,
        { settings: { concurrency: 1 } },
      );
      await relay.drain();
      const [row] = await sql<{ opened_at: Date; probe_at: Date }[]>`
        select opened_at, probe_at from outbox_destinations where name = 'alpha'`;
      expect((ms(row?.probe_at) ?? 0) - (ms(row?.opened_at) ?? 0)).toBe(2_000);

      now += 1_999;
      await relay.drain();
      expect(sink.requests).toHaveLength(1);
      now += 1;
      await relay.drain();
      expect(sink.requests).toHaveLength(2);
    } finally {
      await closePublishers(publishers);
    }
  });
});
