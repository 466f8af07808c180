// The domain's writes of one tick share a statement (src/domain/subscriptions.ts): changes asked for
// side by side in one transaction go to the database together, one statement per turn, and the result
// is the one they would have had applied one after another in the order they were asked for.
import { describe, expect, it, vi } from 'vitest';
import type { Transaction } from '../src/db/client.ts';
import { applySubscriptionChange, type SubscriptionChange, subscriptionChanged } from '../src/domain/subscriptions.ts';
import { uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { subscriptionRow } from './helpers/facts.ts';
import { outboxRowsByKeyPrefix } from './helpers/outbox.ts';

const { db, sql } = await useTestDatabase();

const change = (externalId: string, providerVersion: number, status: SubscriptionChange['status'] = 'active') => ({
  externalId,
  status,
  providerVersion,
  occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, providerVersion)),
});

/** Asks for every change at once, announcing each under its own event id; counts the statements sent. */
async function applyTogether(tx: Transaction, prefix: string, changes: readonly SubscriptionChange[]) {
  // Every statement goes through the transaction's session, prepared or not.
  const execute = vi.spyOn(tx._.session, 'prepareQuery');
  const changed = await Promise.all(
    changes.map((each, index) =>
      applySubscriptionChange(tx, each, {
        source: { provider: 'acme', eventId: `${prefix}_${index}`, eventType: 'subscription.updated' },
        message: subscriptionChanged(each),
      }),
    ),
  );
  return { changed, statements: execute.mock.calls.length };
}

describe('subscription changes of one tick share a statement', () => {
  it('distinct subscriptions: one statement, each answered, only changes announced', async () => {
    const prefix = uniqueId('evt');
    const [a, b, c] = [uniqueId('sub'), uniqueId('sub'), uniqueId('sub')];
    await sql`insert into subscriptions (external_id, status, provider_version, updated_at) values (${c}, 'active', 9, now())`;

    const result = await db.transaction((tx) => applyTogether(tx, prefix, [change(a, 1), change(b, 2), change(c, 3)]));

    expect(result).toEqual({ changed: [true, true, false], statements: 1 });
    expect(await subscriptionRow(sql, a)).toMatchObject({ provider_version: '1' });
    expect(await subscriptionRow(sql, b)).toMatchObject({ provider_version: '2' });
    expect(await subscriptionRow(sql, c)).toMatchObject({ provider_version: '9' });
    const messages = await outboxRowsByKeyPrefix(sql, `acme:${prefix}_`);
    expect(messages.map((message) => message.deduplication_key).sort()).toEqual([
      `acme:${prefix}_0:subscription.changed`,
      `acme:${prefix}_1:subscription.changed`,
    ]);
  });

  it('one subscription changed three times: a turn each, as if applied in the order asked', async () => {
    const prefix = uniqueId('evt');
    const subscription = uniqueId('sub');
    const other = uniqueId('sub');

    const result = await db.transaction((tx) =>
      applyTogether(tx, prefix, [
        change(subscription, 5),
        change(other, 1),
        change(subscription, 3),
        change(subscription, 7),
      ]),
    );

    // v5 changes it, v3 is stale behind it, v7 changes it again: three turns for one subscription.
    expect(result).toEqual({ changed: [true, true, false, true], statements: 3 });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ provider_version: '7', status: 'active' });
    expect(await outboxRowsByKeyPrefix(sql, `acme:${prefix}_`)).toHaveLength(3);
  });

  it('a cancellation earlier in the tick is terminal for the changes after it', async () => {
    const prefix = uniqueId('evt');
    const subscription = uniqueId('sub');

    const result = await db.transaction((tx) =>
      applyTogether(tx, prefix, [change(subscription, 2, 'canceled'), change(subscription, 3, 'active')]),
    );

    expect(result.changed).toEqual([true, false]);
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ provider_version: '2', status: 'canceled' });
  });

  it('a statement that fails fails every change in it, and the transaction writes nothing', async () => {
    const prefix = uniqueId('evt');
    const [good, bad] = [uniqueId('sub'), uniqueId('sub')];

    const failed = db.transaction((tx) => applyTogether(tx, prefix, [change(good, 1), change(bad, -1)]));

    // The version check constraint refuses the second row; the first shared its statement.
    await expect(failed).rejects.toThrow();
    expect(await subscriptionRow(sql, good)).toBeUndefined();
    expect(await outboxRowsByKeyPrefix(sql, `acme:${prefix}_`)).toHaveLength(0);
  });

  it('changes in different transactions never share a statement', async () => {
    const [first, second] = [uniqueId('sub'), uniqueId('sub')];
    const [a, b] = await Promise.all([
      db.transaction((tx) => applyTogether(tx, uniqueId('evt'), [change(first, 1)])),
      db.transaction((tx) => applyTogether(tx, uniqueId('evt'), [change(second, 1)])),
    ]);
    expect([a.statements, b.statements]).toEqual([1, 1]);
    expect(await subscriptionRow(sql, first)).toMatchObject({ provider_version: '1' });
    expect(await subscriptionRow(sql, second)).toMatchObject({ provider_version: '1' });
  });
});

describe('a change asked for without an announcement', () => {
  it('is applied beside announced ones, and only the announced ones write a message', async () => {
    const prefix = uniqueId('evt');
    const [quiet, announced] = [uniqueId('sub'), uniqueId('sub')];
    const before = Number((await sql`select count(*)::int as n from outbox_messages`)[0]?.n);

    const changed = await db.transaction((tx) =>
      Promise.all([
        applySubscriptionChange(tx, change(quiet, 1)),
        applySubscriptionChange(tx, change(announced, 1), {
          source: { provider: 'acme', eventId: `${prefix}_0`, eventType: 'subscription.updated' },
          message: subscriptionChanged(change(announced, 1)),
        }),
      ]),
    );

    expect(changed).toEqual([true, true]);
    expect(await subscriptionRow(sql, quiet)).toMatchObject({ provider_version: '1' });
    expect(Number((await sql`select count(*)::int as n from outbox_messages`)[0]?.n)).toBe(before + 1);
    expect(await outboxRowsByKeyPrefix(sql, `acme:${prefix}_`)).toHaveLength(1);
  });
});
