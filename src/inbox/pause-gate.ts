// The intake's view of paused senders (table sender_pauses, written by src/ops/pauses/sender-pauses.ts): a
// delivery from a paused sender is answered 503 with Retry-After before its body is read, so a flood
// costs neither a signature check nor a write, and the sender's own retries are the backlog that
// drains after the resume. Read through a per-app cache, never per delivery.
import { sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';
import { executePrepared } from '../db/prepared.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';

/** How long one read of the pauses is trusted: a pause or resume reaches every process within this. */
export const PAUSE_CHECK_TTL_MS = 1000;

/**
 * Retry-After of a pause without an end. Most senders ignore the header and keep their own schedule;
 * those that honour it wait this long after the resume at the most, so it is kept to minutes, and a
 * flood that does honour it comes back a few times an hour instead of every few seconds.
 */
export const PAUSED_RETRY_AFTER_SECONDS = 300;

/** Retry-After of a pause with an end: the time left, but never more than an hour (the end may be days away). */
export const PAUSED_RETRY_AFTER_MAX_SECONDS = 3600;

/** The `reason` a paused sender's refusal is logged with. */
export const SENDER_PAUSED = 'sender_paused';

/** Retry-After for a pause ending at `untilMs` (null: when an operator resumes it), at `nowMs`. */
export function pausedRetryAfterSeconds(untilMs: number | null, nowMs: number): number {
  if (untilMs === null) return PAUSED_RETRY_AFTER_SECONDS;
  return Math.min(PAUSED_RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil((untilMs - nowMs) / 1000)));
}

export interface SenderPauseGate {
  /** Throws `unavailable` (503 + Retry-After) while `provider` is paused. */
  check(db: Database, provider: string): Promise<void>;
}

/**
 * Every pause (a row per paused sender: a handful) is read at most once per PAUSE_CHECK_TTL_MS, and
 * concurrent deliveries wait on that one read, as backlogGate (accept.ts) does. Each pause's end is
 * compared with the app's clock at every check, so a pause ends on time between reads, and tests
 * move time instead of sleeping. A failed read (database down) pauses nobody: refusing every sender
 * because the pauses could not be read would turn an outage of this table into an outage of intake,
 * and the delivery's own transaction meets a real outage anyway.
 */
export function senderPauseGate(clock: Clock): SenderPauseGate {
  let checkedAt = Number.NEGATIVE_INFINITY;
  /** By provider: when its pause ends (ms), or null when an operator must resume it. */
  let pausedUntil: ReadonlyMap<string, number | null> = new Map();
  let inFlight: Promise<void> | undefined;

  const refresh = async (db: Database) => {
    try {
      const rows = await executePrepared<{ provider: string; until_ms: string | null }>(
        db,
        sql`select provider, (extract(epoch from until) * 1000)::float8::text as until_ms from sender_pauses`,
      );
      pausedUntil = new Map(rows.map((row) => [row.provider, row.until_ms === null ? null : Number(row.until_ms)]));
    } catch {
      pausedUntil = new Map();
    }
    checkedAt = clock();
  };

  return {
    async check(db, provider) {
      const age = clock() - checkedAt;
      if (age < 0 || age >= PAUSE_CHECK_TTL_MS) {
        inFlight ??= refresh(db).finally(() => {
          inFlight = undefined;
        });
        await inFlight;
      }
      const until = pausedUntil.get(provider);
      if (until === undefined) return;
      const nowMs = clock();
      if (until !== null && until <= nowMs) return;
      throw new AppError('unavailable', {
        why: { reason: SENDER_PAUSED },
        retryAfterSeconds: pausedRetryAfterSeconds(until, nowMs),
      });
    },
  };
}
