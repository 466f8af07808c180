// Isolation per destination (issue 27 part 2), against real HTTP sinks and real PostgreSQL, time moved
// through the relays' clocks (nothing sleeps for a cool-off): the circuit breaker opening after its
// failures (nothing reaches the sink while open, held messages keep their attempts), one probe after
// the cool-off even with two relays racing, a successful probe closing it and the backlog draining, a
// failed probe re-opening it for longer; an operator's pause and resume (nothing published while
// paused, the other destination unaffected, everything published once after) through the admin API
// and the CLI, audited; the rate limit counted against the clock; the concurrency bound at the sink;
// the settings' validation.
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { relayFor } from '../src/ops/maintenance/drainers.ts';
import {
  DEFAULT_BREAKER_COOLOFF_SECONDS,
  DEFAULT_BREAKER_FAILURES,
  parseDestinations,
} from '../src/outbox/destinations.ts';
import { nodeDestinationPublishers } from '../src/outbox/publishers/node.ts';
import type { RelayIsolation } from '../src/outbox/relay.ts';
import { closePublishers } from '../src/outbox/relays.ts';
import { uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows } from './helpers/outbox.ts';
import { refusingUrl, startSink } from './helpers/sink.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'destination-token-for-tests-0123456789';
const sinkA = await startSink();
const sinkB = await startSink();

afterEach(async () => {
  sinkA.respond(() => ({ status: 200, body: '{}' }));
  sinkB.respond(() => ({ status: 200, body: '{}' }));
  sinkA.requests.length = 0;
  sinkB.requests.length = 0;
  await sql`delete from outbox_messages`;
  await sql`delete from outbox_destinations`;
  await sql`delete from operator_actions where target_kind = 'destination'`;
});

/** `count` pending messages for `destination`, due a minute ago; their ids, oldest first. */
async function messagesFor(destination: string, count: number): Promise<string[]> {
  const ids = await insertMessages(sql, count);
  await sql`update outbox_messages set destination = ${destination} where id = any(${ids}::uuid[])`;
  return ids;
}

async function destinationRow(name: string) {
  const [row] = await sql<
    {
      circuit: string;
      consecutive_failures: number;
      opened_at: Date | null;
      probe_at: Date | null;
      paused_at: Date | null;
      paused_by: string | null;
    }[]
  >`select circuit::text as circuit, consecutive_failures, opened_at, probe_at, paused_at, paused_by
    from outbox_destinations where name = ${name}`;
  return row;
}

const COOLOFF_MS = 10_000;
const breaker = (failures: number): RelayIsolation => ({ breaker: { failures, cooloffMs: COOLOFF_MS } });
/** One publish at a time, one per batch: each failure is counted by a statement of its own. */
const oneByOne = { batchSize: 1, batchesInFlight: 1, concurrency: 1 };

const countLines = (logs: readonly string[], message: string) =>
  logs.filter((line) => line.includes(`"${message}"`)).length;

describe('the circuit breaker', () => {
  it('opens after its consecutive failures: nothing more reaches the sink, held messages keep their attempts', async () => {
    sinkA.respond(() => ({ status: 503, body: 'down' }));
    const ids = await messagesFor('alpha', 8);
    const relay = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: oneByOne,
      isolation: breaker(3),
    });

    const first = await relay.relay.drain();
    expect(first).toMatchObject({ claimed: 3, retried: 3, published: 0, stoppedBy: 'unavailable' });
    expect(sinkA.requests).toHaveLength(3);
    const opened = await destinationRow('alpha');
    expect(opened).toMatchObject({ circuit: 'open', consecutive_failures: 3 });
    expect(opened?.probe_at?.getTime()).toBe((opened?.opened_at?.getTime() ?? 0) + COOLOFF_MS);
    expect(countLines(relay.logs, 'outbox circuit opened')).toBe(1);
    const attemptsWhenOpened = (await outboxRows(sql, ids)).map((row) => row.attempts);
    expect(attemptsWhenOpened.filter((attempts) => attempts === 1)).toHaveLength(3);

    // Within the cool-off (and past the failed messages' own backoff), nothing is claimed or sent.
    relay.advance(COOLOFF_MS - 1);
    const held = await relay.relay.drain();
    expect(held).toMatchObject({ claimed: 0, stoppedBy: 'unavailable' });
    expect(sinkA.requests).toHaveLength(3);
    expect((await outboxRows(sql, ids)).map((row) => row.attempts)).toEqual(attemptsWhenOpened);
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'pending')).toBe(true);
  });

  it('sends one probe after the cool-off, even with two relays racing; its success closes the circuit and the backlog drains once', async () => {
    sinkA.respond(() => ({ status: 503, body: 'down' }));
    const ids = await messagesFor('alpha', 12);
    const first = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: oneByOne,
      isolation: breaker(2),
    });
    const second = buildTestRelay(db, { target: sinkA.url, destination: 'alpha', isolation: breaker(2) });
    await first.relay.drain();
    expect(await destinationRow('alpha')).toMatchObject({ circuit: 'open' });
    expect(sinkA.requests).toHaveLength(2);

    sinkA.respond(() => ({ status: 200, body: '{}' }));
    second.setNow(first.now());
    first.advance(COOLOFF_MS + 5_000);
    second.advance(COOLOFF_MS + 5_000);
    await Promise.all([first.relay.drain(), second.relay.drain()]);

    const probes = countLines(first.logs, 'outbox circuit probing') + countLines(second.logs, 'outbox circuit probing');
    expect(probes).toBe(1);
    expect(countLines([...first.logs, ...second.logs], 'outbox circuit closed')).toBe(1);
    expect(await destinationRow('alpha')).toMatchObject({ circuit: 'closed', consecutive_failures: 0, probe_at: null });
    // Drained by whichever relays were admitted: every message published, each acknowledged once.
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'published')).toBe(true);
    const acknowledged = sinkA.requests.slice(2).map((request) => request.messageId);
    expect(acknowledged).toHaveLength(ids.length);
    expect(new Set(acknowledged).size).toBe(ids.length);
  });

  it('re-opens after a failed probe, waiting longer before the next', async () => {
    sinkA.respond(() => ({ status: 503, body: 'down' }));
    const ids = await messagesFor('alpha', 5);
    const relay = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: oneByOne,
      isolation: breaker(2),
    });
    await relay.relay.drain();
    expect(sinkA.requests).toHaveLength(2);

    relay.advance(COOLOFF_MS + 5_000);
    const probe = await relay.relay.drain();
    expect(probe).toMatchObject({ claimed: 1, retried: 1, stoppedBy: 'unavailable' });
    expect(sinkA.requests).toHaveLength(3);
    const reopened = await destinationRow('alpha');
    expect(reopened).toMatchObject({ circuit: 'open', consecutive_failures: 3 });
    // As long again as it has been open (15 s), more than the first cool-off.
    expect((reopened?.probe_at?.getTime() ?? 0) - relay.now()).toBe(COOLOFF_MS + 5_000);
    expect(countLines(relay.logs, 'outbox circuit re-opened')).toBe(1);

    relay.advance(COOLOFF_MS + 1_000);
    expect(await relay.relay.drain()).toMatchObject({ claimed: 0 });
    expect(sinkA.requests).toHaveLength(3);
    expect((await outboxRows(sql, ids)).filter((row) => row.attempts > 0)).toHaveLength(3);
  });

  it('stops a claimed batch at the threshold: the rest are given back unstarted, attempts untouched', async () => {
    sinkA.respond(() => ({ status: 503, body: 'down' }));
    const ids = await messagesFor('alpha', 20);
    const relay = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: { concurrency: 1 },
      isolation: breaker(3),
    });
    expect(await relay.relay.drain()).toMatchObject({ claimed: 20, retried: 3, unavailable: 17 });
    expect(sinkA.requests).toHaveLength(3);
    expect(await destinationRow('alpha')).toMatchObject({ circuit: 'open', consecutive_failures: 3 });
    const rows = await outboxRows(sql, ids);
    expect(rows.filter((row) => row.attempts === 0 && row.status === 'pending' && row.locked_by === null)).toHaveLength(
      17,
    );
  });

  it('counts the failures after the last success of a mixed batch', async () => {
    sinkA.respond((_request, index) => (index === 0 ? { status: 200, body: '{}' } : { status: 503, body: 'down' }));
    await messagesFor('alpha', 4);
    const relay = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: { concurrency: 1 },
      isolation: breaker(5),
    });
    expect(await relay.relay.drain()).toMatchObject({ published: 1, retried: 3 });
    expect(await destinationRow('alpha')).toMatchObject({ circuit: 'closed', consecutive_failures: 3 });
  });

  it('is shared through the database: a relay that saw no failure holds back while another opened the circuit', async () => {
    sinkA.respond(() => ({ status: 503, body: 'down' }));
    await messagesFor('alpha', 4);
    const failing = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      settings: oneByOne,
      isolation: breaker(2),
    });
    await failing.relay.drain();
    sinkA.respond(() => ({ status: 200, body: '{}' }));
    const other = buildTestRelay(db, { target: sinkA.url, destination: 'alpha', isolation: breaker(2) });
    other.setNow(failing.now());
    expect(await other.relay.drain()).toMatchObject({ claimed: 0, stoppedBy: 'unavailable' });
    expect(sinkA.requests).toHaveLength(2);
  });

  it('counts an unreachable target too, and another destination is not held back', async () => {
    await messagesFor('alpha', 3);
    const healthyIds = await messagesFor('beta', 3);
    const down = buildTestRelay(db, {
      target: await refusingUrl(),
      destination: 'alpha',
      settings: oneByOne,
      isolation: breaker(1),
    });
    const healthy = buildTestRelay(db, { target: sinkB.url, destination: 'beta', isolation: breaker(1) });
    const [alpha, beta] = await Promise.all([down.relay.drain(), healthy.relay.drain()]);
    expect(alpha).toMatchObject({ unavailable: 1, published: 0 });
    expect(beta).toMatchObject({ published: 3 });
    expect(await destinationRow('alpha')).toMatchObject({ circuit: 'open' });
    expect(await destinationRow('beta')).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    expect((await outboxRows(sql, healthyIds)).every((row) => row.status === 'published')).toBe(true);
  });
});

describe('pause and resume', () => {
  const destinations = parseDestinations(
    parseConfig({
      OUTBOX_DESTINATIONS: JSON.stringify([
        { name: 'alpha', url: sinkA.url },
        { name: 'beta', url: sinkB.url },
      ]),
    }),
  );

  async function api(path: string, body: unknown) {
    const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN }, outboxRouting: destinations });
    const response = await test.request(`/admin/api${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('holds a paused destination back (the other flows), then publishes everything once after the resume', async () => {
    const alphaIds = await messagesFor('alpha', 6);
    const betaIds = await messagesFor('beta', 4);
    const paused = await api('/destinations/alpha/pause', { operator: 'ada', note: 'maintenance at alpha' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      before: 'active',
      destination: { name: 'alpha', paused_by: 'ada', circuit: 'closed' },
    });
    expect(typeof (paused.body.destination as { paused_at: unknown }).paused_at).toBe('string');
    // Pausing again records it again, and says it was paused.
    expect((await api('/destinations/alpha/pause', { operator: 'grace' })).body).toMatchObject({
      before: 'paused',
      destination: { paused_by: 'grace' },
    });

    const alpha = buildTestRelay(db, { target: sinkA.url, destination: 'alpha' });
    const beta = buildTestRelay(db, { target: sinkB.url, destination: 'beta' });
    const [heldBack, flowing] = await Promise.all([alpha.relay.drain(), beta.relay.drain()]);
    expect(heldBack.claimed).toBe(0);
    expect(flowing.published).toBe(4);
    expect(sinkA.requests).toHaveLength(0);
    const waiting = await outboxRows(sql, alphaIds);
    expect(waiting.every((row) => row.status === 'pending' && row.attempts === 0 && row.locked_by === null)).toBe(true);
    expect((await outboxRows(sql, betaIds)).every((row) => row.status === 'published')).toBe(true);

    const resumed = await api('/destinations/alpha/resume', { operator: 'ada' });
    expect(resumed).toEqual({
      status: 200,
      body: { resumed: true, destination: { name: 'alpha', paused_at: null, paused_by: null, circuit: 'closed' } },
    });
    expect(await alpha.relay.drain()).toMatchObject({ published: 6 });
    expect((await outboxRows(sql, alphaIds)).every((row) => row.status === 'published')).toBe(true);
    expect(sinkA.requests.map((request) => request.messageId).sort()).toEqual(
      (await outboxRows(sql, alphaIds)).map((row) => row.id).sort(),
    );

    const audit = await sql<
      { operator: string; action: string; before_status: string; after_status: string; detail: unknown }[]
    >`select operator, action, before_status, after_status, detail from operator_actions
      where target_kind = 'destination' and target = 'alpha' order by at, action, before_status`;
    expect(audit).toEqual([
      {
        operator: 'ada',
        action: 'pause',
        before_status: 'active',
        after_status: 'paused',
        detail: { note: 'maintenance at alpha' },
      },
      { operator: 'grace', action: 'pause', before_status: 'paused', after_status: 'paused', detail: { note: null } },
      { operator: 'ada', action: 'resume', before_status: 'paused', after_status: 'active', detail: { note: null } },
    ]);
  });

  it('answers resumed: false for a destination that was not paused, and records nothing', async () => {
    expect(await api('/destinations/beta/resume', { operator: 'ada' })).toEqual({
      status: 200,
      body: { resumed: false, destination: { name: 'beta', paused_at: null, paused_by: null, circuit: 'closed' } },
    });
    expect(await sql`select 1 from operator_actions where target_kind = 'destination'`).toHaveLength(0);
  });

  it('refuses an unknown destination (404) and a bad field (400 naming it), leaving nothing behind', async () => {
    expect(await api('/destinations/gamma/pause', { operator: 'ada' })).toEqual({
      status: 404,
      body: { error: 'not_found' },
    });
    expect(await api('/destinations/gamma/resume', { operator: 'ada' })).toEqual({
      status: 404,
      body: { error: 'not_found' },
    });
    expect(await api('/destinations/alpha/pause', {})).toMatchObject({ status: 400, body: { field: 'operator' } });
    expect(await api('/destinations/alpha/pause', { operator: 'ada', note: 'a\u0007bell' })).toMatchObject({
      status: 400,
      body: { field: 'note' },
    });
    expect(await api('/destinations/alpha/pause', { operator: 'ada', minutes: 5 })).toMatchObject({ status: 400 });
    expect(await api('/destinations/alpha/resume', { operator: '' })).toMatchObject({
      status: 400,
      body: { field: 'operator' },
    });
    expect(await sql`select 1 from outbox_destinations where paused_at is not null`).toHaveLength(0);
    expect(await sql`select 1 from operator_actions where target_kind = 'destination'`).toHaveLength(0);
  });

  it('lists both routes in the OpenAPI document', async () => {
    const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN }, outboxRouting: destinations });
    const response = await test.request('/admin/api/openapi.json', { headers: { authorization: `Bearer ${TOKEN}` } });
    const document = (await response.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/admin/api/destinations/{name}/pause', '/admin/api/destinations/{name}/resume']),
    );
  });

  it('pauses and resumes from the CLI: exit 0, 3 for an unknown name, 2 without --operator', async () => {
    const env = {
      DATABASE_URL: url,
      OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'alpha', url: sinkA.url }]),
    };
    const paused = await runCli(
      ['destinations', 'pause', 'alpha', '--operator', 'ada', '--note', 'vendor outage', '--json'],
      env,
    );
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.output)).toMatchObject({
      before: 'active',
      destination: { name: 'alpha', paused_by: 'ada' },
    });
    expect(await destinationRow('alpha')).toMatchObject({ paused_by: 'ada' });
    expect((await runCli(['destinations', 'pause', 'gamma', '--operator', 'ada'], env)).code).toBe(3);
    expect((await runCli(['destinations', 'pause', 'alpha'], env)).code).toBe(2);
    expect((await runCli(['destinations', 'resume', 'gamma', '--operator', 'ada'], env)).code).toBe(3);
    const resumed = await runCli(['destinations', 'resume', 'alpha', '--operator', 'ada'], env);
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.output).toContain('resumed alpha');
    expect(await destinationRow('alpha')).toMatchObject({ paused_at: null, paused_by: null });
    const actions = await sql<{ action: string; operator: string }[]>`select action, operator from operator_actions
      where target_kind = 'destination' and target = 'alpha' order by at, action`;
    expect(actions).toEqual([
      { action: 'pause', operator: 'ada' },
      { action: 'resume', operator: 'ada' },
    ]);
  });
});

describe('rate limit and concurrency', () => {
  it('publishes no more than rate_per_second per second of the relay clock', async () => {
    const ids = await messagesFor('alpha', 20);
    const relay = buildTestRelay(db, {
      target: sinkA.url,
      destination: 'alpha',
      isolation: { ...breaker(5), ratePerSecond: 5 },
    });
    expect(await relay.relay.drain()).toMatchObject({ claimed: 5, published: 5 });
    // The clock stands still: the bucket is empty.
    expect(await relay.relay.drain()).toMatchObject({ claimed: 0 });
    relay.advance(1_000);
    expect(await relay.relay.drain()).toMatchObject({ published: 5 });
    relay.advance(400);
    expect(await relay.relay.drain()).toMatchObject({ published: 2 });
    // A long quiet spell fills the bucket to one second's worth, not more.
    relay.advance(60_000);
    expect(await relay.relay.drain()).toMatchObject({ published: 5 });
    expect(sinkA.requests).toHaveLength(17);
    expect((await outboxRows(sql, ids)).filter((row) => row.status === 'published')).toHaveLength(17);
  });

  it('holds a destination to its own concurrency, read from its settings', async () => {
    await messagesFor('alpha', 12);
    let open = 0;
    let most = 0;
    sinkA.respond(async () => {
      open += 1;
      most = Math.max(most, open);
      await new Promise((resolve) => setTimeout(resolve, 15));
      open -= 1;
      return { status: 200, body: '{}' };
    });
    const config = parseConfig({
      OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'alpha', url: sinkA.url, settings: { concurrency: 2 } }]),
    });
    const logger = createLogger({ level: 'silent', now: () => new Date(), write: () => {} });
    const publishers = nodeDestinationPublishers(parseDestinations(config), {
      clock: Date.now,
      logger,
      timeoutMs: 2_000,
    });
    try {
      const relay = relayFor(
        { config, db, clock: Date.now, logger, newId: () => uniqueId('relay'), random: () => 0.5 },
        publishers,
      );
      expect(await relay.drain()).toMatchObject({ published: 12 });
    } finally {
      await closePublishers(publishers);
    }
    expect(most).toBe(2);
  });
});

describe('settings', () => {
  const problemsOf = (list: unknown) => {
    try {
      parseDestinations(parseConfig({ OUTBOX_DESTINATIONS: JSON.stringify(list) }));
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('gives every destination the defaults, `default` included', () => {
    const routing = parseDestinations(
      parseConfig({
        OUTBOX_TARGET_URL: 'http://127.0.0.1:1/x',
        OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'a', url: 'http://x/' }]),
      }),
    );
    for (const destination of routing.destinations) {
      expect(destination.settings).toEqual({
        breaker_failures: DEFAULT_BREAKER_FAILURES,
        breaker_cooloff_seconds: DEFAULT_BREAKER_COOLOFF_SECONDS,
      });
    }
  });

  it('keeps the settings given', () => {
    const [destination] = parseDestinations(
      parseConfig({
        OUTBOX_DESTINATIONS: JSON.stringify([
          {
            name: 'a',
            url: 'http://x/',
            settings: { rate_per_second: 2.5, concurrency: 3, breaker_failures: 9, breaker_cooloff_seconds: 5 },
          },
        ]),
      }),
    ).destinations;
    expect(destination?.settings).toEqual({
      rate_per_second: 2.5,
      concurrency: 3,
      breaker_failures: 9,
      breaker_cooloff_seconds: 5,
    });
  });

  it('names every refused setting', () => {
    const problems = problemsOf([
      { name: 'a', url: 'http://x/', settings: { rate_per_second: 0 } },
      { name: 'b', url: 'http://x/', settings: { concurrency: 1.5 } },
      { name: 'c', url: 'http://x/', settings: { breaker_failures: 0 } },
      { name: 'd', url: 'http://x/', settings: { breaker_cooloff_seconds: -1 } },
      { name: 'e', url: 'http://x/', settings: { concurrency: '4' } },
    ]);
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(/^OUTBOX_DESTINATIONS\[0\]\.settings\.rate_per_second: /);
    expect(problems[1]).toMatch(/^OUTBOX_DESTINATIONS\[1\]\.settings\.concurrency: /);
    expect(problems[2]).toMatch(/^OUTBOX_DESTINATIONS\[2\]\.settings\.breaker_failures: /);
    expect(problems[3]).toMatch(/^OUTBOX_DESTINATIONS\[3\]\.settings\.breaker_cooloff_seconds: /);
    expect(problems[4]).toMatch(/^OUTBOX_DESTINATIONS\[4\]\.settings\.concurrency: /);
  });
});
