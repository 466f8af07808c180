// A deliberately non-idempotent domain change (a counter bumped by every application), so applying
// an event twice shows up as a database fact instead of being hidden by the version guard.
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import { z } from 'zod';
import { defineHandler, type EventHandler } from '../../src/domain/handlers.ts';
import { uniqueId } from './acme.ts';
import { subscriptionRow } from './facts.ts';

export interface Counter {
  /** Bumps the counter, whatever the payload. */
  handler: EventHandler<unknown>;
  /** How many times the handler's change committed. */
  value(): Promise<number>;
}

export async function newCounter(sql: postgres.Sql): Promise<Counter> {
  const counterId = uniqueId('counter');
  await sql`insert into subscriptions (external_id, status, provider_version, updated_at)
    values (${counterId}, 'active', 0, now())`;
  return {
    handler: defineHandler({
      schema: z.unknown(),
      async apply({ tx }) {
        await tx.execute(
          drizzleSql`update subscriptions set provider_version = provider_version + 1 where external_id = ${counterId}`,
        );
      },
    }),
    value: async () => Number((await subscriptionRow(sql, counterId))?.provider_version),
  };
}
