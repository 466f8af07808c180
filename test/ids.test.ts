// The service's own ids: UUIDv7s that increase within one process whatever the clock does
// (decision 0017), drawn from a pool of random bytes.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newTimeOrderedId } from '../src/lib/clock.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectIncreasing(ids: readonly string[]) {
  for (const [index, id] of ids.entries()) {
    expect(id).toMatch(UUID_V7);
    if (index > 0) expect(id > (ids[index - 1] as string), `${ids[index - 1]} then ${id}`).toBe(true);
  }
  expect(new Set(ids).size).toBe(ids.length);
}

describe('newTimeOrderedId', () => {
  afterEach(() => vi.restoreAllMocks());

  it('increases across many ids, more than one pool of random bytes', () => {
    expectIncreasing(Array.from({ length: 5_000 }, () => newTimeOrderedId()));
  });

  // The clock is held at the present, never ahead: the generator's state is the process's, and ids made
  // after this file (files share a worker) must still carry their own time.
  it('counts up within one millisecond and keeps increasing when the clock steps back', () => {
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    const sameMillisecond = Array.from({ length: 1_000 }, () => newTimeOrderedId());
    expectIncreasing(sameMillisecond);
    expect(new Set(sameMillisecond.map((id) => id.slice(0, 13))).size).toBeLessThanOrEqual(2);
    clock.mockReturnValue(now - 5_000);
    const afterStep = Array.from({ length: 100 }, () => newTimeOrderedId());
    expectIncreasing([...sameMillisecond, ...afterStep]);
  });

  it('carries the time in its first 48 bits', async () => {
    // A millisecond later than any id made so far, so this one starts a millisecond of its own.
    const made = Date.now();
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(made + 1));
    const before = Date.now();
    const id = newTimeOrderedId();
    const after = Date.now();
    const at = Number.parseInt(id.replace('-', '').slice(0, 12), 16);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
  });
});
