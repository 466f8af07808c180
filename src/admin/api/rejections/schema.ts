// The admin API's refused deliveries' inputs and answers (rejections/route.ts): the ring's and the
// counts' queries and answers. The dashboard's page parses its address with the same queries.
import { z } from '@hono/zod-openapi';
import { REJECTION_RING_SIZE } from '../../../inbox/rejection-log.ts';
import { UNKNOWN_SENDER } from '../../../inbox/rejections.ts';
import { rejectionReasons } from '../../../lib/rejection-reasons.ts';
import { allSenders } from '../../../senders/registry.ts';
import { timeBound, timestamp } from '../schemas.ts';

/** A sender's name as refusals are recorded under it: a route's name, or the one for routes that name none. */
export const rejectionProviders: [string, ...string[]] = [
  UNKNOWN_SENDER,
  ...allSenders.map((provider) => provider.name),
];

/** Refusals listed unless `limit` says otherwise. */
export const REJECTIONS_DEFAULT_LIMIT = 50;

export const filterFields = {
  provider: z
    .enum(rejectionProviders)
    .optional()
    .openapi({ description: `the sender; \`${UNKNOWN_SENDER}\` for routes that named no enabled sender` }),
  reason: z.enum(rejectionReasons).optional(),
};

export const rejectionsQuery = z
  .object({
    ...filterFields,
    since: timeBound('refused at or after'),
    until: timeBound('refused before'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(REJECTION_RING_SIZE)
      .default(REJECTIONS_DEFAULT_LIMIT)
      .openapi({ description: 'at most this many, newest first' }),
  })
  .strict();

export const rejectionCountsQuery = z
  .object({
    ...filterFields,
    since: timeBound('minutes starting at or after'),
    until: timeBound('minutes starting before'),
  })
  .strict();

export const rejectionSchema = z
  .object({
    at: timestamp,
    provider: z.string(),
    status: z.number().int(),
    reason: z.string(),
    detail: z
      .string()
      .nullable()
      .openapi({ description: 'the field, limit, content type or requested route it failed on' }),
    trace_id: z.string().nullable(),
    headers: z.record(z.string(), z.string()).openapi({
      description:
        'as received, names lower-cased, credentials "[redacted]" (whole values by header name; credential-like query parameters inside URLs and query strings), values cut at 200 characters',
    }),
  })
  .openapi('Rejection');

export const rejectionsAnswer = z.object({
  rejections: rejectionSchema.array(),
  ring_size: z.number().int().openapi({ description: 'how many of the most recent refusals are kept' }),
});

export const rejectionCountSchema = z
  .object({
    provider: z.string(),
    reason: z.string(),
    status: z.number().int().nullable(),
    n: z.number().int(),
    first_minute: timestamp,
    last_minute: timestamp,
  })
  .openapi('RejectionCount');

export const rejectionCountsAnswer = z.object({
  counts: rejectionCountSchema.array().openapi({ description: 'per sender and reason, the most frequent first' }),
  total: z.number().int(),
});
