-- Edited after drizzle-kit generate: the new index first and IF NOT EXISTS, so `migrate --online`
-- builds it concurrently before this transaction (decision 0011), and the two it replaces dropped
-- after. One unique index of the key with text_pattern_ops is both the key's uniqueness (ON CONFLICT
-- (deduplication_key) infers it: bytewise equality is text's) and the prefix index.
CREATE UNIQUE INDEX IF NOT EXISTS "outbox_messages_deduplication_key_idx" ON "outbox_messages" USING btree ("deduplication_key" text_pattern_ops);--> statement-breakpoint
ALTER TABLE "outbox_messages" DROP CONSTRAINT "outbox_messages_deduplication_key_unique";--> statement-breakpoint
DROP INDEX "outbox_messages_key_prefix_idx";
