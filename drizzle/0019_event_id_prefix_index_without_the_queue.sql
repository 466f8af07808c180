-- Edited after drizzle-kit generate: the new index first and IF NOT EXISTS, so `migrate --online`
-- builds it concurrently before this transaction (decision 0011), and the old one dropped after. The
-- id prefix index leaves out the queue as the other listing indexes do (decision 0035): async mode's
-- acceptance insert then maintains one index fewer.
CREATE INDEX IF NOT EXISTS "webhook_events_listed_event_id_prefix_idx" ON "webhook_events" USING btree ("event_id" text_pattern_ops) WHERE "webhook_events"."status" not in ('received', 'processing');--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_event_id_prefix_idx";
