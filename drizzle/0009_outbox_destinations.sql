CREATE TYPE "public"."destination_circuit" AS ENUM('closed', 'open', 'half_open');--> statement-breakpoint
ALTER TYPE "public"."operator_action_target_kind" ADD VALUE 'destination';--> statement-breakpoint
CREATE TABLE "outbox_destinations" (
	"name" text PRIMARY KEY NOT NULL,
	"circuit" "destination_circuit" DEFAULT 'closed' NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"opened_at" timestamp with time zone,
	"probe_at" timestamp with time zone,
	"paused_at" timestamp with time zone,
	"paused_by" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "outbox_messages" ADD COLUMN "destination" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox_messages" ADD COLUMN "traceparent" text;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "outbox_messages_destination_pending_idx" ON "outbox_messages" USING btree ("destination","available_at") WHERE "outbox_messages"."status" = 'pending';