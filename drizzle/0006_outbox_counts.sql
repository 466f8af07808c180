-- Keeps outbox_message_counts (see src/db/schema.ts) in step with outbox_messages, as
-- drizzle/0004_event_counts_triggers.sql does for the events: statement-level triggers add each
-- change's deltas to the rows of the connection's own slot. Generated as a custom migration
-- (`drizzle-kit generate --custom`): drizzle-kit's schema cannot hold functions or triggers.
CREATE FUNCTION outbox_message_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An update moves a message from its old status to its new one (most keep it: a lease, an
  -- attempt); an insert or a delete names its one transition table `changed_rows` and passes its
  -- sign as argument.
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO outbox_message_counts AS c (status, slot, n)
    SELECT d.status, pg_backend_pid(), sum(d.delta)
    FROM (SELECT status, -1 AS delta FROM old_rows UNION ALL SELECT status, 1 FROM new_rows) d
    GROUP BY 1
    HAVING sum(d.delta) <> 0
    ON CONFLICT (status, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO outbox_message_counts AS c (status, slot, n)
    SELECT status, pg_backend_pid(), count(*) * TG_ARGV[0]::integer FROM changed_rows GROUP BY 1
    ON CONFLICT (status, slot) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION outbox_message_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM outbox_message_counts;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER outbox_message_counts_on_insert AFTER INSERT ON outbox_messages
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_message_counts_follow('1');
--> statement-breakpoint
CREATE TRIGGER outbox_message_counts_on_delete AFTER DELETE ON outbox_messages
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_message_counts_follow('-1');
--> statement-breakpoint
CREATE TRIGGER outbox_message_counts_on_update AFTER UPDATE ON outbox_messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_message_counts_follow();
--> statement-breakpoint
CREATE TRIGGER outbox_message_counts_on_truncate AFTER TRUNCATE ON outbox_messages
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_message_counts_clear();
--> statement-breakpoint
-- The messages already stored are counted once, after this migration has committed and without
-- holding writers (backfillOutboxCounts in src/db/event-counts-backfill.ts, which `db:migrate`
-- runs): this row (slot -2) marks that count as still to do.
INSERT INTO outbox_message_counts (status, slot, n) VALUES ('pending', -2, 0);
