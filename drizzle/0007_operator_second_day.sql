CREATE TYPE "public"."bulk_job_kind" AS ENUM('replay_events', 'retry_outbox');--> statement-breakpoint
CREATE TYPE "public"."bulk_job_status" AS ENUM('queued', 'running', 'done', 'cancelled', 'failed');--> statement-breakpoint
ALTER TYPE "public"."operator_action_target_kind" ADD VALUE 'sender';--> statement-breakpoint
CREATE SEQUENCE "public"."webhook_rejection_number_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "bulk_jobs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"kind" "bulk_job_kind" NOT NULL,
	"status" "bulk_job_status" DEFAULT 'queued' NOT NULL,
	"operator" text NOT NULL,
	"filter" jsonb NOT NULL,
	"total" integer NOT NULL,
	"processed" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"position" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"cancelled_by" text,
	"last_error" varchar(500),
	"locked_until" timestamp with time zone,
	"locked_by" text
);
--> statement-breakpoint
CREATE TABLE "sender_pauses" (
	"provider" text PRIMARY KEY NOT NULL,
	"paused_at" timestamp with time zone DEFAULT now() NOT NULL,
	"paused_by" text NOT NULL,
	"until" timestamp with time zone,
	"note" text
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"provider" text NOT NULL,
	"event_id" text NOT NULL,
	"delivered_at" timestamp with time zone NOT NULL,
	"trace_id" text NOT NULL,
	"status_code" smallint NOT NULL,
	"outcome" text NOT NULL,
	"duration_ms" real NOT NULL,
	CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY("provider","event_id","delivered_at","trace_id")
);
--> statement-breakpoint
CREATE TABLE "webhook_rejection_counts" (
	"bucket_start" timestamp with time zone NOT NULL,
	"provider" text NOT NULL,
	"reason" text NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "webhook_rejection_counts_pkey" PRIMARY KEY("bucket_start","provider","reason")
);
--> statement-breakpoint
CREATE TABLE "webhook_rejections" (
	"slot" integer PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"provider" text NOT NULL,
	"status_code" smallint NOT NULL,
	"reason" text NOT NULL,
	"detail" text,
	"trace_id" text,
	"headers" jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "operator_actions" ADD COLUMN "job_id" uuid;--> statement-breakpoint
ALTER TABLE "operator_actions" ADD COLUMN "detail" jsonb;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "bulk_jobs_created_idx" ON "bulk_jobs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "bulk_jobs_runnable_idx" ON "bulk_jobs" USING btree ("created_at") WHERE "bulk_jobs"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_rejections_at_idx" ON "webhook_rejections" USING btree ("at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "operator_actions_job_idx" ON "operator_actions" USING btree ("job_id","at") WHERE "operator_actions"."job_id" is not null;