// Chaos with real processes: the service killed mid-load, its database connections cut mid-load,
// and three services racing on duplicates. Every 2xx must be a committed event, and redelivery
// must converge to exactly one application per event.
// Needs a process: services are killed with SIGKILL and cut off from the database mid-load; several share one
// database.
import { describe, expect, it } from 'vitest';
import { acmeEvent, signedHeaders, TEST_SECRET, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';
import { type ServiceUnderTest, startListeningService } from './helpers/process.ts';
import { startSink } from './helpers/sink.ts';

interface Delivery {
  eventId: string;
  body: string;
}

interface Answer {
  eventId: string;
  status: number | 'no answer';
  body: string;
  /** The Retry-After header of a 503, in seconds. */
  retryAfter?: number;
}

function deliveries(count: number): Delivery[] {
  return Array.from({ length: count }, () => {
    const event = acmeEvent({
      created: Math.floor(Date.now() / 1000),
      data: { id: uniqueId('sub'), status: 'active' },
    });
    return { eventId: event.id, body: JSON.stringify(event) };
  });
}

/** Sends every delivery with `concurrency` in flight; `pick` chooses the service for each one. */
async function send(
  list: Delivery[],
  concurrency: number,
  pick: (index: number) => string,
  onAnswer: (answer: Answer, done: number) => void = () => {},
): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < list.length; index = next++) {
      const delivery = list[index] as Delivery;
      // Signed at send time with the real clock: the services under test use it.
      const headers = await signedHeaders(delivery.body, { timestamp: Math.floor(Date.now() / 1000) });
      let answer: Answer;
      try {
        const response = await fetch(`${pick(index)}/webhooks/acme`, { method: 'POST', body: delivery.body, headers });
        answer = { eventId: delivery.eventId, status: response.status, body: await response.text() };
        const retryAfter = response.headers.get('retry-after');
        if (retryAfter !== null) answer.retryAfter = Number(retryAfter);
      } catch {
        answer = { eventId: delivery.eventId, status: 'no answer', body: '' };
      }
      answers.push(answer);
      onAnswer(answer, answers.length);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answers;
}

const serviceEnv = (url: string) => ({ DATABASE_URL: url, ACME_WEBHOOK_SECRET: TEST_SECRET, DB_POOL_MAX: '8' });

/**
 * A request deadline no busy machine reaches (the default is 5 s): where a scenario expects every
 * delivery answered 200, a 503 must come from what the scenario does, not from a slow CPU.
 */
const patientServiceEnv = (url: string) => ({ ...serviceEnv(url), HANDLER_DEADLINE_MS: String(patience(60_000)) });

async function stop(service: ServiceUnderTest): Promise<void> {
  service.child.kill('SIGTERM');
  await service.exited;
}

// A database per scenario, created at file level so that each is dropped when the file is done.
const killedDatabase = await useTestDatabase();
const cutDatabase = await useTestDatabase();
const racedDatabase = await useTestDatabase();
const outboxDatabase = await useTestDatabase();

describe('chaos', () => {
  // Four thousand deliveries through two real services: on a busy 2-core machine that alone can take
  // longer than the suite's default limit, which stays for every other test.
  it(
    'SIGKILL mid-load: every 2xx is committed; redelivering all converges to one application each',
    async () => {
      const { sql, url } = killedDatabase;
      const list = deliveries(2000);
      const first = await startListeningService(patientServiceEnv(url));
      const answers = await send(
        list,
        16,
        () => first.origin,
        (_answer, done) => {
          if (done === 600) first.child.kill('SIGKILL');
        },
      );
      await first.exited;

      const acknowledged = answers.filter((a) => a.status === 200).map((a) => a.eventId);
      expect(acknowledged.length).toBeGreaterThanOrEqual(600);
      expect(answers.some((a) => a.status === 'no answer')).toBe(true);
      const committed = await sql<
        { event_id: string }[]
      >`select event_id from webhook_events where status = 'completed'`;
      const committedIds = new Set(committed.map((row) => row.event_id));
      expect(acknowledged.filter((id) => !committedIds.has(id))).toEqual([]);

      const second = await startListeningService(patientServiceEnv(url));
      try {
        const redelivered = await send(list, 16, () => second.origin);
        expect(redelivered.filter((a) => a.status !== 200)).toEqual([]);
      } finally {
        await stop(second);
      }
      const [facts] = await sql<{ events: number; subscriptions: number }[]>`
      select (select count(*)::int from webhook_events where status = 'completed') as events,
             (select count(*)::int from subscriptions where provider_version = 1) as subscriptions`;
      expect(facts).toEqual({ events: 2000, subscriptions: 2000 });
    },
    patience(300_000),
  );

  it('database connections cut mid-load: 503 while it cannot commit, never a 2xx for an unsaved event', async () => {
    const { sql, url, name } = cutDatabase;
    const list = deliveries(1500);
    const service = await startListeningService(serviceEnv(url));
    let cutting: Promise<void> | undefined;
    let refusedOne = false;
    let sent = false;
    // Ten rounds, and more until a delivery was refused: on a busy machine a round can land while no
    // statement is in flight. Sending ends the cuts in any case (then the test fails on no 503).
    const cutConnections = async () => {
      for (let round = 0; round < 10 || (!refusedOne && !sent); round++) {
        await sql`select pg_terminate_backend(pid) from pg_stat_activity
          where datname = ${name} and application_name = 'webhook-inbox'`;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    try {
      const answers = await send(
        list,
        16,
        () => service.origin,
        (answer, done) => {
          if (done === 300) cutting = cutConnections();
          if (cutting !== undefined && answer.status === 503) refusedOne = true;
        },
      );
      sent = true;
      await cutting;

      expect(
        answers.filter((a) => a.status !== 200 && a.status !== 503),
        'answers other than 200/503',
      ).toEqual([]);
      const unavailable = answers.filter((a) => a.status === 503);
      expect(unavailable.length, 'deliveries refused with 503 while connections were cut').toBeGreaterThan(0);
      expect(unavailable.every((a) => a.body === '{"error":"unavailable"}')).toBe(true);
      const committed = await sql<{ event_id: string }[]>`select event_id from webhook_events`;
      const committedIds = new Set(committed.map((row) => row.event_id));
      expect(
        answers.filter((a) => a.status === 200 && !committedIds.has(a.eventId)),
        '2xx without a row',
      ).toEqual([]);

      // It recovers by itself: the sender's retries of the refused ones succeed. A sender retries
      // more than once, after the Retry-After it was given: a retry sent the instant the last cut
      // lands can still meet a connection that postgres.js is reopening after its backoff. Retries go
      // on until WAIT_MS has passed, not for a count: how soon the pool is whole again depends on the machine.
      let refused = list.filter((d) => unavailable.some((a) => a.eventId === d.eventId));
      let retryAfter = 0;
      const retriesEnd = Date.now() + WAIT_MS;
      while (refused.length > 0 && Date.now() < retriesEnd) {
        await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
        const retried = await send(refused, 8, () => service.origin);
        const failed = retried.filter((a) => a.status !== 200);
        refused = refused.filter((d) => failed.some((a) => a.eventId === d.eventId));
        retryAfter = Math.min(5, Math.max(0, ...failed.map((a) => a.retryAfter ?? 1)));
      }
      const why = service
        .output()
        .split('\n')
        .filter((line) => refused.some((d) => line.includes(d.eventId)))
        .slice(-10);
      expect(refused, `retries after the cut that still failed; the service logged:\n${why.join('\n')}`).toEqual([]);
      const [facts] = await sql<{ events: number }[]>`select count(*)::int as events from webhook_events`;
      expect(facts?.events).toBe(1500);
    } finally {
      await stop(service);
    }
  });

  it('three services on one database, duplicates of 200 ids sprayed across them: 200 applications', async () => {
    const { sql, url } = racedDatabase;
    const services = await Promise.all([0, 1, 2].map(() => startListeningService(patientServiceEnv(url))));
    try {
      const unique = deliveries(200);
      const sprayed = unique.flatMap((delivery) => [delivery, delivery, delivery, delivery, delivery]);
      for (let i = sprayed.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [sprayed[i], sprayed[j]] = [sprayed[j] as Delivery, sprayed[i] as Delivery];
      }
      const answers = await send(sprayed, 32, (index) => (services[index % 3] as ServiceUnderTest).origin);

      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
      expect(answers.filter((a) => a.body === '{"received":true}')).toHaveLength(200);
      expect(answers.filter((a) => a.body === '{"received":true,"duplicate":true}')).toHaveLength(800);
      const [facts] = await sql<{ events: number; subscriptions: number }[]>`
        select (select count(*)::int from webhook_events where status = 'completed') as events,
               (select count(*)::int from subscriptions) as subscriptions`;
      expect(facts).toEqual({ events: 200, subscriptions: 200 });
    } finally {
      await Promise.all(services.map(stop));
    }
  });

  it('outbox target failing half the time for a while: every message published once per key, none lost', async () => {
    const { sql, url } = outboxDatabase;
    const sink = await startSink();
    const publishedByKey = new Map<string, number>();
    // Every other request refused until FLAKY_REFUSALS were: "for a while" counted in requests, not in
    // seconds, so however slowly the machine sends and relays, the outage happens and then ends.
    const FLAKY_REFUSALS = 150;
    let requests = 0;
    let refused = 0;
    sink.respond((request) => {
      const key = String(request.headers['idempotency-key']);
      requests += 1;
      if (refused < FLAKY_REFUSALS && requests % 2 === 1) {
        refused += 1;
        return { status: 503, body: '{"error":"busy"}' };
      }
      publishedByKey.set(key, (publishedByKey.get(key) ?? 0) + 1);
      return { status: 200, body: '{}' };
    });
    const service = await startListeningService({
      ...patientServiceEnv(url),
      OUTBOX_TARGET_URL: sink.url,
      RELAY_INTERVAL_MS: '50',
      OUTBOX_BACKOFF_BASE_MS: '20',
      OUTBOX_BACKOFF_MAX_MS: '300',
      OUTBOX_MAX_ATTEMPTS: '1000',
    });
    try {
      const list = deliveries(300);
      const answers = await send(list, 16, () => service.origin);
      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
      await expect
        .poll(
          async () =>
            (await sql<{ n: number }[]>`select count(*)::int as n from outbox_messages where status = 'published'`)[0]
              ?.n,
          { timeout: WAIT_MS, interval: 250 },
        )
        .toBe(300);
    } finally {
      await stop(service);
    }
    const [facts] = await sql<{ total: number; retried: number; dead: number }[]>`
      select count(*)::int as total, count(*) filter (where attempts > 0)::int as retried,
             count(*) filter (where status = 'dead')::int as dead from outbox_messages`;
    expect(facts).toMatchObject({ total: 300, dead: 0 });
    expect(facts?.retried).toBeGreaterThan(0);
    expect(publishedByKey.size).toBe(300);
    expect([...publishedByKey.values()].every((count) => count === 1)).toBe(true);
  });
});
