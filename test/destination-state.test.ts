// A destination's shared state (src/outbox/destination-state.ts) on its own: what `admission` answers
// for a destination never seen, a closed, an open and a probed circuit, and what `recordBreakerOutcome`
// says of the change it made (opened, then reopened by a failed probe, then closed), with the probe
// times it wrote. Real PostgreSQL; time is the `nowMs` each call is given.
import { describe, expect, it } from 'vitest';
import { admission, ensureDestinationRow, recordBreakerOutcome } from '../src/outbox/destination-state.ts';
import { TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();
const policy = { failures: 3, cooloffMs: 10_000 };

describe('destination state', () => {
  it('admits a destination it has no row for, and a closed one, as closed', async () => {
    expect(await admission(db, uniqueId('never-seen'), TEST_NOW_MS, policy)).toEqual({ kind: 'closed' });
    const name = uniqueId('dest');
    await ensureDestinationRow(db, name);
    expect(await admission(db, name, TEST_NOW_MS, policy)).toEqual({ kind: 'closed' });
  });

  it('opens at the count with its probe a cool-off ahead, re-opens on a failed probe for longer, closes on a publish', async () => {
    const name = uniqueId('dest');
    await ensureDestinationRow(db, name);
    let now = TEST_NOW_MS;
    expect(await recordBreakerOutcome(db, name, now, policy, { published: 0, trailingFailures: 3 })).toEqual({
      kind: 'opened',
      failures: 3,
      probeAtMs: now + policy.cooloffMs,
    });
    expect(await admission(db, name, now + 1, policy)).toEqual({ kind: 'open', probeAtMs: now + policy.cooloffMs });

    now += policy.cooloffMs;
    expect(await admission(db, name, now, policy)).toEqual({ kind: 'probe' });
    // The probe failed after the circuit had been open one cool-off: it waits as long again.
    expect(await recordBreakerOutcome(db, name, now, policy, { published: 0, trailingFailures: 1 })).toEqual({
      kind: 'reopened',
      failures: 4,
      probeAtMs: now + policy.cooloffMs,
    });

    now += policy.cooloffMs;
    expect(await admission(db, name, now, policy)).toEqual({ kind: 'probe' });
    expect(await recordBreakerOutcome(db, name, now, policy, { published: 1, trailingFailures: 0 })).toEqual({
      kind: 'closed',
      was: 'half_open',
    });
    expect(await admission(db, name, now, policy)).toEqual({ kind: 'closed' });
  });
});
