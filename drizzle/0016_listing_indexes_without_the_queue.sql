-- Edited after drizzle-kit generate: the new indexes first and IF NOT EXISTS, so `migrate --online`
-- builds them concurrently before this transaction (decision 0011), and the old ones dropped after.
CREATE INDEX IF NOT EXISTS "webhook_events_listed_received_idx" ON "webhook_events" USING btree ("received_at") WHERE "webhook_events"."status" not in ('received', 'processing');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_listed_provider_received_idx" ON "webhook_events" USING btree ("provider","received_at","event_id") WHERE "webhook_events"."status" not in ('received', 'processing');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_listed_type_received_idx" ON "webhook_events" USING btree ("event_type","received_at","provider","event_id") WHERE "webhook_events"."status" not in ('received', 'processing');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_listed_subject_idx" ON "webhook_events" USING btree ((case "provider"
    when 'stripe' then "payload" #>> '{data,object,id}'
    when 'github' then "payload" #>> '{repository,full_name}'
    when 'shopify' then "payload" ->> 'id'
    when 'acme' then "payload" #>> '{data,id}'
  end),"received_at") WHERE (case "webhook_events"."provider"
    when 'stripe' then "webhook_events"."payload" #>> '{data,object,id}'
    when 'github' then "webhook_events"."payload" #>> '{repository,full_name}'
    when 'shopify' then "webhook_events"."payload" ->> 'id'
    when 'acme' then "webhook_events"."payload" #>> '{data,id}'
  end) is not null and "webhook_events"."status" not in ('received', 'processing');--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_received_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_provider_received_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_type_received_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_events_subject_idx";
