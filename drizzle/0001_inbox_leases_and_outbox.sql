CREATE TYPE "public"."outbox_status" AS ENUM('pending', 'published', 'dead');--> statement-breakpoint
CREATE TABLE "outbox_messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"topic" text NOT NULL,
	"deduplication_key" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" "outbox_status" DEFAULT 'pending' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" varchar(500),
	"locked_until" timestamp with time zone,
	"locked_by" text,
	CONSTRAINT "outbox_messages_deduplication_key_unique" UNIQUE("deduplication_key")
);
--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "content_digest" text;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "available_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "locked_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "locked_by" text;--> statement-breakpoint
CREATE INDEX "outbox_messages_pending_idx" ON "outbox_messages" USING btree ("available_at") WHERE "outbox_messages"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "outbox_messages_status_idx" ON "outbox_messages" USING btree ("status","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_events_provider_content_digest_idx" ON "webhook_events" USING btree ("provider","content_digest") WHERE "webhook_events"."content_digest" is not null;--> statement-breakpoint
CREATE INDEX "webhook_events_claimable_idx" ON "webhook_events" USING btree ("available_at") WHERE "webhook_events"."status" in ('received', 'processing', 'failed');