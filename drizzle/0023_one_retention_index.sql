-- Edited after drizzle-kit generate: the new index first and IF NOT EXISTS, so `migrate --online`
-- builds it concurrently before this transaction (decision 0011), and the old ones dropped after.
-- Retention's two walks share one index (retentionClass in src/db/schema.ts): a finished row without
-- a content digest was an entry in both of the old ones, so the intake's insert of a finished row
-- and the worker's completion each write one index entry fewer.
CREATE INDEX IF NOT EXISTS "webhook_events_retention_idx" ON "webhook_events" USING btree ((("payload" is null)::int * 2 + ("content_digest" is not null)::int),coalesce("completed_at", "received_at")) WHERE "webhook_events"."status" in ('completed', 'ignored', 'dead_letter') and ("webhook_events"."payload" is not null or "webhook_events"."content_digest" is null);--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_expiry_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_payload_expiry_idx";
