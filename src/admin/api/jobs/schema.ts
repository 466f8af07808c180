// The admin API's bulk job inputs and answers (src/admin/api/jobs/route.ts). A job's filter is the list's
// own query schema (events or outbox) without its page position, so a filter the list refuses is
// refused here with the same field named; the status is narrowed to the ones the action takes. A copy
// to a destination takes the outbox filters that do not name a status or destination, and `to`.
import { z } from '@hono/zod-openapi';
import { type BulkJobKind, bulkJobKinds, bulkJobStatuses, JOB_FAILURES_KEPT } from '../../../db/schema.ts';
import { REPLAYABLE_STATUSES, type ReplayableStatus } from '../../../ops/jobs/job-kinds.ts';
import { eventsQuery } from '../events/schema.ts';
import { outboxQuery } from '../outbox/schema.ts';
import { operatorBody, pathParam } from '../schemas.ts';

const replayableStatus = z
  .enum(REPLAYABLE_STATUSES as [ReplayableStatus, ...ReplayableStatus[]])
  .default('failed')
  .openapi({ description: 'the events to replay: failed (the default), parked or dead_letter' });

const eventJobFilter = eventsQuery
  .omit({ cursor: true, limit: true })
  .extend({ status: replayableStatus })
  .strict()
  .openapi('EventJobFilter', { description: 'the events list filters (GET /events), without cursor and limit' });

const outboxJobFilter = outboxQuery
  .omit({ cursor: true, limit: true })
  .extend({
    status: z.enum(['dead']).default('dead').openapi({ description: 'retrying is for dead messages only' }),
  })
  .strict()
  .openapi('OutboxJobFilter', { description: 'the outbox list filters (GET /outbox), without cursor and limit' });

const sendJobFilter = outboxQuery
  .pick({ topic: true, id: true, since: true, until: true })
  .extend({
    to: z
      .string()
      .min(1)
      .max(40)
      .openapi({ description: 'the configured destination to send to (any other name is refused)' }),
  })
  .strict()
  .openapi('SendJobFilter', {
    description:
      'the outbox list filters topic, id, since and until (messages of any status and destination), and the destination to send them to',
  });

const dryRun = z
  .boolean()
  .optional()
  .openapi({ description: 'count the matching rows and do nothing (no job, nothing recorded)' });

/** Each job kind's filter as a request gives it (the rest of a kind is its entry in ops/jobs/job-kinds.ts). */
const JOB_FILTERS = {
  replay_events: eventJobFilter.prefault({}),
  retry_outbox: outboxJobFilter.prefault({}),
  send_to_destination: sendJobFilter,
} satisfies Record<BulkJobKind, z.ZodType>;

const requestOf = <K extends BulkJobKind>(kind: K) =>
  z
    .object({
      kind: z.literal(kind),
      filter: JOB_FILTERS[kind],
      operator: operatorBody.shape.operator,
      dry_run: dryRun,
    })
    .strict();

export const jobRequest = z
  .discriminatedUnion('kind', [requestOf('replay_events'), requestOf('retry_outbox'), requestOf('send_to_destination')])
  .openapi('BulkJobRequest');

/** A kind without its request above fails here, rather than being refused at run time. */
const everyKindRequested: Record<Exclude<BulkJobKind, z.infer<typeof jobRequest>['kind']>, never> = {};
void everyKindRequested;

const timestamp = z.string().openapi({ format: 'date-time' });

export const jobSchema = z
  .object({
    id: z.string().openapi({ format: 'uuid' }),
    kind: z.enum(bulkJobKinds),
    status: z.enum(bulkJobStatuses),
    outcome: z.enum([...bulkJobStatuses, 'done_with_failures']).openapi({
      description:
        'the status as an operator reads it: done_with_failures for a replay or retry job done with failed items (never shown as a success); else the status',
    }),
    operator: z.string(),
    filter: z.record(z.string(), z.string()).openapi({ description: 'the filter as given, times in ISO 8601' }),
    total: z.number().int().openapi({
      description:
        'items the filter matched when the job was created, counted again when it starts, once every transaction older than the job has ended (for send_to_destination: distinct messages)',
    }),
    processed: z.number().int().openapi({ description: 'items taken so far, the failed ones included' }),
    failed: z.number().int().openapi({
      description:
        'items the action could not change: a replay that failed or parked again, a message no longer dead, a message not copied (the destination has it, its filters refuse it, or its event is gone and it filters on type)',
    }),
    created_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
    cancelled_by: z.string().nullable(),
    last_error: z.string().nullable(),
  })
  .openapi('BulkJob');

/** Said before a retry is confirmed (src/ops/actions/retry-warnings.ts); always empty for the other kinds. */
const warnings = z
  .object({
    destination: z.string(),
    state: z.enum(['open', 'half_open', 'paused']),
    count: z.number().int().openapi({ description: 'of the matching rows, those that go to this destination' }),
    text: z.string(),
  })
  .array()
  .openapi({
    description:
      'retry_outbox: one per destination among the matching rows whose circuit is open or half-open or that is paused: those messages go back to waiting, pending, until it publishes again',
  });

export const jobCounted = z
  .object({
    count: z.number().int().openapi({ description: 'rows the filter matches now (exact)' }),
    job: z.null().openapi({ description: 'no job: a dry run, or nothing matched' }),
    warnings,
  })
  .openapi('BulkJobCount');

export const jobCreated = z.object({ count: z.number().int(), job: jobSchema, warnings }).openapi('BulkJobCreated');

export const jobsQuery = z
  .object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(200)
      .default(50)
      .openapi({ description: 'at most this many, newest first' }),
  })
  .strict();

export const jobParams = z.object({ id: pathParam('id', 64) });

export const jobsAnswer = z.object({ jobs: jobSchema.array() });
export const jobFailure = z
  .object({
    target_kind: z.enum(['event', 'outbox']),
    target: z
      .string()
      .openapi({ description: 'the item as its audit row names it: provider/event_id, or a message id' }),
    reason: z.string().openapi({ description: 'why the action could not change it' }),
    at: timestamp,
    page: z.string().openapi({ description: "the item's dashboard page" }),
  })
  .openapi('BulkJobFailure');

export const jobAnswer = z.object({
  job: jobSchema,
  failures: jobFailure.array().openapi({
    description: `the failed items with their reasons, in the order the job met them: the first ${JOB_FAILURES_KEPT} of the job (failed counts them all)`,
  }),
});
export const cancelAnswer = z.object({
  cancelled: z
    .boolean()
    .openapi({ description: 'false when the job had already finished (done, failed or cancelled): left as it was' }),
  job: jobSchema,
});
