-- The event counters' trigger function (drizzle/0004_event_counts_triggers.sql) as before, but an
-- UPDATE statement that changed no row returns at once. The intake's claim is an INSERT … ON CONFLICT
-- DO UPDATE (a failed row is taken back), and such a statement fires the statement-level UPDATE
-- trigger too, with empty transition tables, on every batch: the aggregate below then started and
-- found nothing, a fifth of the claim's database time for an async batch of `received` rows
-- (docs/benchmarks.md, where the intake stands). Written here because drizzle-kit's schema cannot
-- hold functions; generated as a custom migration (`drizzle-kit generate --custom`).
CREATE OR REPLACE FUNCTION webhook_event_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    -- An ON CONFLICT DO UPDATE that updated nothing: nothing moved from one status to another.
    IF NOT EXISTS (SELECT FROM new_rows) THEN
      RETURN NULL;
    END IF;
    -- An update moves a row from its old status to its new one: -1 and +1. Most updates (leases,
    -- attempts, payloads) keep the status; their deltas cancel out and write nothing.
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
    -- An insert or a delete names its one transition table `changed_rows` and passes its sign (+1, -1).
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
