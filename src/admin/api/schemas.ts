// What every admin API resource's schemas share (each resource's own are in <resource>/schema.ts):
// the strict list queries' parts (text filters, limit, cursor, time bounds), the operator's body,
// timestamps, the error answer and a list's counts. The routes validate with these zod schemas
// (through @hono/zod-openapi) and the OpenAPI document is generated from the same objects, so the
// document cannot drift from what the routes accept. Queries are strict: a parameter the route does
// not know is refused, not ignored (a misspelt filter would otherwise list everything).
import { z } from '@hono/zod-openapi';
import { OPERATOR_NAME_MAX, operatorNameProblem } from '../../lib/operator-name.ts';
import { isStorableText } from '../../lib/text.ts';
import { decodeCursor } from '../../ops/reads/cursor.ts';
import { parseTimeBound } from '../../ops/reads/time-bound.ts';
import { allSenders } from '../../senders/registry.ts';

export const providerNames = allSenders.map((provider) => provider.name) as [string, ...string[]];

/** Rows in a page unless `limit` says otherwise (the API's and the dashboard's lists). */
export const DEFAULT_LIMIT = 50;

/** A text filter: refused (400) when the database could not compare it (NUL, a lone surrogate). */
export const textFilter = (max: number, description: string) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine(isStorableText, { message: 'not storable text' })
    .optional()
    .openapi({ description });

export const limit = z.coerce
  .number()
  .int()
  .min(1)
  .max(1000)
  .default(DEFAULT_LIMIT)
  .openapi({ description: 'at most this many, newest first' });

/** `since`/`until`: an ISO 8601 time with its offset, or a duration back from now (90s, 15m, 6h, 2d). */
export const timeBound = (description: string) =>
  z
    .string()
    .max(64)
    .refine((value) => parseTimeBound(value, 0) !== undefined, { message: 'not a time' })
    .optional()
    .openapi({ description: `${description}: an ISO 8601 time or a duration back from now (90s, 15m, 6h, 2d)` });

export const cursor = (keys: number, isKey?: (key: string) => boolean) =>
  z
    .string()
    .max(2048)
    .refine((value) => decodeCursor(value, keys, isKey) !== undefined, { message: 'not a cursor' })
    .optional()
    .openapi({ description: "the previous page's next_cursor" });

export const payloadFlag = z
  .enum(['true', 'false'])
  .optional()
  .openapi({ description: 'include the stored payload (null once purged)' });

export const operatorBody = z
  .object({
    operator: z
      .string()
      .trim()
      .min(1)
      .max(OPERATOR_NAME_MAX)
      .refine((name) => operatorNameProblem(name) === undefined, { message: 'not an operator name' })
      .openapi({ description: 'who is doing this; recorded in operator_actions (no control characters)' }),
  })
  .openapi('OperatorRequest');

// Answers: documentation and the handlers' types; the handlers build them from src/ops's wire forms.
export const timestamp = z.string().openapi({ format: 'date-time' });
export const nullableTimestamp = timestamp.nullable();

export const errorSchema = z
  .object({
    error: z.string(),
    field: z.string().optional().openapi({ description: 'on a 400: the parameter or field that was refused' }),
  })
  .openapi('Error');

export const nextCursor = z
  .string()
  .nullable()
  .openapi({ description: 'pass as ?cursor= for the next page; null on the last page' });

/** A list's counts by status under its other filters: on the first page only (a cursor's pages would repeat them). */
export const listCounts = z.record(z.string(), z.number().int()).optional().openapi({
  description:
    'rows by status under every other filter of this request (status aside: each count is what that status would list); on the first page only, absent when a cursor is given',
});

/** Whether every figure of `counts` is exact; false when some status passed the count's cap. */
export const countsComplete = z.boolean().optional().openapi({
  description:
    'present and false when counting stopped at 10,000 rows (with an id or subject filter: all matching rows; in the outbox, under a filter: per status): the figures then mean "at least"',
});

/** A path parameter of one to `max` characters (with its `description` where its name does not say it). */
export const pathParam = (name: string, max: number, description?: string) =>
  z
    .string()
    .min(1)
    .max(max)
    .openapi({ param: { name, in: 'path' }, ...(description === undefined ? {} : { description }) });

/** The query of an answer that holds a stored payload: the payload only when asked for. */
export const payloadQuery = z.object({ payload: payloadFlag }).strict();

/**
 * A listing's page (events, outbox): its rows under `key`, the cursor of the next page and, on the
 * first page, the counts by status.
 */
export const listPage = <Key extends string, Row extends z.ZodType>(key: Key, row: Row) =>
  z.object({
    ...({ [key]: row.array() } as { [K in Key]: z.ZodArray<Row> }),
    next_cursor: nextCursor,
    counts: listCounts,
    counts_complete: countsComplete,
  });

export const documentAnswer = z.record(z.string(), z.unknown()).openapi({ description: 'OpenAPI 3.1' });
