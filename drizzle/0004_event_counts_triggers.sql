-- Keeps webhook_event_counts (see src/db/schema.ts) in step with webhook_events, in the transaction
-- that changes the rows: statement-level triggers add each change's deltas (+1 for a row's new
-- state, -1 for its old one) to the rows of the connection's own slot; and the index of events that
-- waited, whose predicate is a function. Written here because drizzle-kit's schema cannot hold
-- functions, triggers or statistics objects; generated as a custom migration
-- (`drizzle-kit generate --custom`).

-- The overview's backlog (src/ops/overview.ts) reads the finished events that were waiting at the
-- end of a whole minute: those done in a later minute than they arrived in, by when they were done.
-- A function, not inlined (plpgsql), so that statistics on it tell the planner how few rows the
-- index holds; on the bare expression it guesses half the table and reads all of it.
CREATE OR REPLACE FUNCTION webhook_event_done_minutes_later(completed_at timestamptz, received_at timestamptz)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  RETURN completed_at IS NOT NULL
    AND date_bin('1 minute', completed_at, timestamptz '1970-01-01 00:00:00+00')
      <> date_bin('1 minute', received_at, timestamptz '1970-01-01 00:00:00+00');
END
$$;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS webhook_events_done_minutes_later_idx ON webhook_events (completed_at) INCLUDE (received_at)
  WHERE webhook_event_done_minutes_later(completed_at, received_at);
--> statement-breakpoint
CREATE STATISTICS webhook_events_done_minutes_later_stats
  ON (webhook_event_done_minutes_later(completed_at, received_at)) FROM webhook_events;
--> statement-breakpoint
-- The counters one event belongs to: all time and its hour per sender and type, and its minute for
-- all senders together ('*': the charts need minutes, the filtered counts only hours).
CREATE FUNCTION webhook_event_count_keys(provider text, event_type text, received_at timestamptz)
RETURNS TABLE (bucket_seconds integer, bucket_start timestamptz, provider text, event_type text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  VALUES
    (0, timestamptz '1970-01-01 00:00:00+00', provider, event_type),
    (3600, date_bin('1 hour', received_at, timestamptz '1970-01-01 00:00:00+00'), provider, event_type),
    (60, date_bin('1 minute', received_at, timestamptz '1970-01-01 00:00:00+00'), '*', '*')
$$;
--> statement-breakpoint
CREATE FUNCTION webhook_event_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An update moves a row from its old status to its new one: -1 and +1. Most updates (leases,
  -- attempts, payloads) keep the status; their deltas cancel out and write nothing. An insert or a
  -- delete names its one transition table `changed_rows` and passes its sign (+1, -1) as argument.
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO webhook_event_counts AS c (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
    SELECT k.bucket_seconds, k.bucket_start, k.provider, k.event_type, d.status, pg_backend_pid(), sum(d.delta)
    FROM (
      SELECT provider, event_type, status, received_at, -1 AS delta FROM old_rows
      UNION ALL SELECT provider, event_type, status, received_at, 1 FROM new_rows
    ) d CROSS JOIN LATERAL webhook_event_count_keys(d.provider, d.event_type, d.received_at) k
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(d.delta) <> 0
    ON CONFLICT (bucket_seconds, bucket_start, provider, event_type, status, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO webhook_event_counts AS c (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
    SELECT k.bucket_seconds, k.bucket_start, k.provider, k.event_type, d.status, pg_backend_pid(),
      count(*) * TG_ARGV[0]::integer
    FROM changed_rows d CROSS JOIN LATERAL webhook_event_count_keys(d.provider, d.event_type, d.received_at) k
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT (bucket_seconds, bucket_start, provider, event_type, status, slot) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION webhook_event_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM webhook_event_counts;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER webhook_event_counts_on_insert AFTER INSERT ON webhook_events
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_event_counts_follow('1');
--> statement-breakpoint
CREATE TRIGGER webhook_event_counts_on_delete AFTER DELETE ON webhook_events
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_event_counts_follow('-1');
--> statement-breakpoint
CREATE TRIGGER webhook_event_counts_on_update AFTER UPDATE ON webhook_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_event_counts_follow();
--> statement-breakpoint
CREATE TRIGGER webhook_event_counts_on_truncate AFTER TRUNCATE ON webhook_events
  FOR EACH STATEMENT EXECUTE FUNCTION webhook_event_counts_clear();
--> statement-breakpoint
-- The rows already stored are counted once, after this migration has committed and without
-- holding writers (backfillEventCounts in src/db/event-counts-backfill.ts, which `db:migrate` runs):
-- this row marks that count as still to do.
INSERT INTO webhook_event_counts (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
VALUES (-1, timestamptz '1970-01-01 00:00:00+00', '*', '*', 'received', 0, 0);
