ALTER TABLE "webhook_deliveries" ADD COLUMN "repeats" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "last_delivered_at" timestamp with time zone;