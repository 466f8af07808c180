CREATE TABLE "outbox_message_counts" (
	"status" "outbox_status" NOT NULL,
	"slot" integer NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "outbox_message_counts_pkey" PRIMARY KEY("status","slot")
);
