CREATE TABLE "bulk_job_failures" (
	"job_id" uuid NOT NULL,
	"target_kind" "operator_action_target_kind" NOT NULL,
	"target" text NOT NULL,
	"reason" varchar(500) NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bulk_job_failures_job_id_target_pk" PRIMARY KEY("job_id","target")
);
