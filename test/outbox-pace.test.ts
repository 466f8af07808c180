// The pace a 429 sets (issue 34 item 1, src/outbox/pace.ts): a target that takes 20 messages a
// second and answers the rest 429 with `Retry-After: 1` receives at least 18 a second from a backlog,
// and is seldom asked again. Real HTTP sink and PostgreSQL; time is the relay's clock, moved by its
// own waits and by the test between passes (the schedule's 0.8–1.2 s, at once after a pass that spent
// its budget), so the figure does not depend on the machine.
import { afterEach, describe, expect, it } from 'vitest';
import { createPacer, PACE_MARGIN, PACE_MIN_RATE, PACE_RAISE_AFTER_MS, PACE_RAISE_FACTOR } from '../src/outbox/pace.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages } from './helpers/outbox.ts';
import { startSink } from './helpers/sink.ts';

const { sql, db } = await useTestDatabase();
const sink = await startSink();

afterEach(async () => {
  sink.respond(() => ({ status: 200, body: '{}' }));
  await sql`delete from outbox_messages`;
  await sql`delete from outbox_destinations`;
});

const LIMIT = 20;
const WARMUP_MS = 5_000;
const MEASURED_MS = 30_000;

/** Whether the limiter takes a request at `nowMs`: a fixed window of a second, or a bucket of a second's worth. */
type Limiter = (nowMs: number) => boolean;

function fixedWindow(): Limiter {
  let second = Number.NaN;
  let count = 0;
  return (nowMs) => {
    const current = Math.floor(nowMs / 1000);
    if (current !== second) {
      second = current;
      count = 0;
    }
    count += 1;
    return count <= LIMIT;
  };
}

function tokenBucket(): Limiter {
  let tokens = LIMIT;
  let filledAt: number | undefined;
  return (nowMs) => {
    tokens = Math.min(LIMIT, tokens + ((nowMs - (filledAt ?? nowMs)) / 1000) * LIMIT);
    filledAt = nowMs;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
}

describe('a target that rate-limits at 20/s with 429 + Retry-After: 1', () => {
  it.each([
    ['a fixed one-second window', fixedWindow],
    ['a token bucket', tokenBucket],
  ])('(%s) receives at least 18 messages a second over 30 s, with few 429s', async (_kind, limiter) => {
    await insertMessages(sql, LIMIT * 50);
    // One publish at a time, so each starts at the relay's clock as its waits set it.
    const relay = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 } });
    const takes = limiter();
    const taken: number[] = [];
    const refused: number[] = [];
    sink.respond(() => {
      const nowMs = relay.now();
      if (!takes(nowMs)) {
        refused.push(nowMs);
        return { status: 429, headers: { 'retry-after': '1' } };
      }
      taken.push(nowMs);
      return { status: 200, body: '{}' };
    });
    const from = relay.now() + WARMUP_MS;
    const until = from + MEASURED_MS;
    // The schedule's intervals (±20% around a second), in a fixed order.
    const intervals = [800, 1200, 900, 1100, 1000];
    for (let pass = 0; relay.now() < until; pass++) {
      const summary = await relay.relay.drain();
      relay.advance(summary.stoppedBy === 'budget' ? 0 : (intervals[pass % intervals.length] ?? 1000));
    }
    const within = (times: readonly number[]) => times.filter((at) => at >= from && at < until).length;
    expect(within(taken) / (MEASURED_MS / 1000)).toBeGreaterThanOrEqual(18);
    expect(within(refused)).toBeLessThanOrEqual(2);
    // Never faster than the target allows, on average.
    expect(within(taken) / (MEASURED_MS / 1000)).toBeLessThanOrEqual(LIMIT);
    expect(relay.logs.filter((line) => line.includes('"outbox destination asked to slow down, pacing"')).length).toBe(
      1,
    );
  });
});

describe('the pacer alone', () => {
  const policy = { baseMs: 1000, maxMs: 60_000 };
  const pacer = () => createPacer(policy, () => 0.5);

  it('learns the rate the target took in the second before a 429, and a later wave of the same ones only raises it', () => {
    const p = pacer();
    expect(p.ratePerSecond).toBeUndefined();
    expect(p.claimLimit(500)).toBe(500);
    // A publish exactly a window old no longer counts; the ten within it do.
    p.published(9_000);
    for (let i = 1; i <= 10; i++) p.published(9_000 + i * 50);
    expect(p.refused(10_000, 1000)).toEqual({ began: true, delayMs: 1000 });
    expect(p.ratePerSecond).toBeCloseTo(10 * PACE_MARGIN);
    // Metered: a second's worth per claim, at least one.
    expect(p.claimLimit(500)).toBe(Math.ceil(10 * PACE_MARGIN));
    expect(p.claimLimit(3)).toBe(3);
    // The rest of the wave (still within its wait) measures fewer and lowers nothing.
    expect(p.refused(10_010, 1000).began).toBe(false);
    expect(p.ratePerSecond).toBeCloseTo(10 * PACE_MARGIN);
    // Publishes of the wave that settled after its first 429 raise the rate another 429 of it measures…
    p.published(10_020);
    p.published(10_030);
    expect(p.refused(10_040, 1000).began).toBe(false);
    expect(p.ratePerSecond).toBeCloseTo(12 * PACE_MARGIN);
    // …and one that measures fewer (the oldest have left the window) keeps the higher rate.
    expect(p.refused(10_480, 1000).began).toBe(false);
    expect(p.ratePerSecond).toBeCloseTo(12 * PACE_MARGIN);
  });

  it("takes a new wave's measure even when it is lower, and learns from a later 429 of a wave whose first measured nothing", () => {
    const p = pacer();
    for (let i = 0; i < 10; i++) p.published(i * 50);
    p.refused(600, 1000);
    expect(p.ratePerSecond).toBeCloseTo(10 * PACE_MARGIN);
    // The next wave, after the wait: two taken in its second, so two is the rate now.
    p.published(1_700);
    p.published(1_800);
    expect(p.refused(2_000, 1000).began).toBe(true);
    expect(p.ratePerSecond).toBeCloseTo(2 * PACE_MARGIN);

    const fresh = pacer();
    fresh.refused(0, 1000); // nothing taken before it: no rate yet
    expect(fresh.ratePerSecond).toBeUndefined();
    fresh.published(10); // one of the wave settles after its first 429
    expect(fresh.refused(20, 1000).began).toBe(false);
    expect(fresh.ratePerSecond).toBeCloseTo(PACE_MARGIN);
  });

  it('keeps a start already spaced past the end of a shorter wait', () => {
    const p = pacer();
    for (let i = 0; i < 4; i++) p.published(i * 10);
    p.refused(100, 1000); // 3.8 a second learned, waiting until 1,100
    expect(p.nextStartMs(1_100)).toBe(1_100);
    p.take(1_100);
    const spaced = 1_100 + 1000 / (4 * PACE_MARGIN);
    // A 429 whose Retry-After ends before that start does not bring it forward.
    p.refused(1_101, 1);
    expect(p.waiting(1_102)).toBe(false);
    expect(p.nextStartMs(1_110)).toBeCloseTo(spaced);
  });

  it('halves a learned rate at a 429 with nothing taken before it, never below the slowest rate', () => {
    const p = pacer();
    for (let i = 0; i < 4; i++) p.published(i * 10);
    p.refused(100, 1000);
    expect(p.ratePerSecond).toBeCloseTo(4 * PACE_MARGIN);
    p.refused(5_000, 1000);
    expect(p.ratePerSecond).toBeCloseTo(2 * PACE_MARGIN);
    for (let wave = 0; wave < 10; wave++) p.refused(10_000 + wave * 5_000, 1000);
    expect(p.ratePerSecond).toBe(PACE_MIN_RATE);
    expect(p.claimLimit(500)).toBe(1);
  });

  it('waits out the longer of two waits, spaces starts 1/rate apart, and raises the rate after a steady spell', () => {
    const p = pacer();
    for (let i = 0; i < 20; i++) p.published(i * 40);
    p.refused(1_000, 2_000);
    // A shorter Retry-After later in the wave does not cut the wait short.
    expect(p.refused(1_500, 100)).toEqual({ began: false, delayMs: 1_500 });
    expect(p.waiting(2_999)).toBe(true);
    expect(p.waiting(3_000)).toBe(false);
    const rate = p.ratePerSecond ?? 0;
    expect(p.nextStartMs(3_000)).toBe(3_000);
    p.take(3_000);
    expect(p.nextStartMs(3_000)).toBeCloseTo(3_000 + 1000 / rate);
    // Raised only once a whole PACE_RAISE_AFTER_MS passed without a 429.
    p.nextStartMs(1_500 + PACE_RAISE_AFTER_MS - 1);
    expect(p.ratePerSecond).toBe(rate);
    p.nextStartMs(1_500 + PACE_RAISE_AFTER_MS);
    expect(p.ratePerSecond).toBeCloseTo(rate * PACE_RAISE_FACTOR);
  });
});
