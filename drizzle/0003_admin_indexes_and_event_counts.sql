CREATE TABLE "webhook_event_counts" (
	"bucket_seconds" integer NOT NULL,
	"bucket_start" timestamp with time zone NOT NULL,
	"provider" text NOT NULL,
	"event_type" text NOT NULL,
	"status" "webhook_event_status" NOT NULL,
	"slot" integer NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "webhook_event_counts_pkey" PRIMARY KEY("bucket_seconds","bucket_start","provider","event_type","status","slot")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "outbox_messages_created_idx" ON "outbox_messages" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "outbox_messages_topic_created_idx" ON "outbox_messages" USING btree ("topic","created_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "outbox_messages_key_prefix_idx" ON "outbox_messages" USING btree ("deduplication_key" text_pattern_ops);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_received_idx" ON "webhook_events" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_provider_received_idx" ON "webhook_events" USING btree ("provider","received_at","event_id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_type_received_idx" ON "webhook_events" USING btree ("event_type","received_at","provider","event_id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_event_id_prefix_idx" ON "webhook_events" USING btree ("event_id" text_pattern_ops);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_subject_idx" ON "webhook_events" USING btree ((case "provider"
    when 'stripe' then "payload" #>> '{data,object,id}'
    when 'github' then "payload" #>> '{repository,full_name}'
    when 'shopify' then "payload" ->> 'id'
    when 'acme' then "payload" #>> '{data,id}'
  end),"received_at") WHERE (case "webhook_events"."provider"
    when 'stripe' then "webhook_events"."payload" #>> '{data,object,id}'
    when 'github' then "webhook_events"."payload" #>> '{repository,full_name}'
    when 'shopify' then "webhook_events"."payload" ->> 'id'
    when 'acme' then "webhook_events"."payload" #>> '{data,id}'
  end) is not null;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_expiry_idx" ON "webhook_events" USING btree (coalesce("completed_at", "received_at")) WHERE "webhook_events"."content_digest" is null and "webhook_events"."status" in ('completed', 'ignored', 'dead_letter');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_events_payload_expiry_idx" ON "webhook_events" USING btree (coalesce("completed_at", "received_at")) WHERE "webhook_events"."payload" is not null and "webhook_events"."status" in ('completed', 'ignored', 'dead_letter');