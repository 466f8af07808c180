// The admin API's bulk jobs (src/ops/jobs/bulk-jobs.ts): count or create a job from a list filter, list
// jobs, show one's progress, cancel one. Registered on the admin API's own OpenAPIHono (../api.ts), so
// the routes share its bearer gate, its 400 for refused fields and its OpenAPI document.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import type { Clock } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import {
  type BulkJob,
  cancelBulkJob,
  createBulkJob,
  failedEventKey,
  getBulkJob,
  type JobFailure,
  jobJson,
  listBulkJobs,
  listJobFailures,
} from '../../../ops/jobs/bulk-jobs.ts';
import { type BulkJobSpec, namedDestinations, specWarnings } from '../../../ops/jobs/job-kinds.ts';
import { isConfiguredDestination } from '../../../ops/reads/destinations-view.ts';
import { timeRange } from '../../../ops/reads/time-bound.ts';
import { eventUrl } from '../../event-urls.ts';
import { actingOperator } from '../../operators.ts';
import { configuredDestinations, type DestinationViewDeps } from '../destinations/route.ts';
import { json, refused } from '../openapi-parts.ts';
import { errorSchema, operatorBody } from '../schemas.ts';
import {
  cancelAnswer,
  jobAnswer,
  jobCounted,
  jobCreated,
  jobParams,
  jobRequest,
  jobsAnswer,
  jobsQuery,
} from './schema.ts';

const notFound = json(errorSchema, 'unknown job');

/** A failed item's dashboard page: its event's, or its message's. */
export function failurePage(failure: Pick<JobFailure, 'targetKind' | 'target'>): string {
  const event = failedEventKey(failure);
  return event === undefined ? `/admin/outbox/${encodeURIComponent(failure.target)}` : eventUrl('dashboard', event);
}

/** A failed item's wire form, shared by the admin API and the CLI's `--json`. */
export function failureJson(failure: JobFailure) {
  return {
    target_kind: failure.targetKind,
    target: failure.target,
    reason: failure.reason,
    at: failure.at.toISOString(),
    page: failurePage(failure),
  };
}

/** One job and its failed items, as `GET /jobs/{id}` and `jobs show --json` answer. */
export const jobWithFailures = (job: BulkJob, failures: readonly JobFailure[]) => ({
  job: jobJson(job),
  failures: failures.map(failureJson),
});

const routes = {
  create: createRoute({
    method: 'post',
    path: '/jobs',
    summary:
      'Replay the events or retry the dead outbox messages a list filter matches, or send the outbox messages it matches to a destination, as a job (dry_run: only count them)',
    request: { body: { required: true, content: { 'application/json': { schema: jobRequest } } } },
    responses: {
      200: json(jobCounted, 'a dry run, or a filter that matches nothing: the count, no job, nothing recorded'),
      202: json(jobCreated, 'the job, queued; its runner works through it in batches'),
      ...refused,
    },
  }),
  list: createRoute({
    method: 'get',
    path: '/jobs',
    summary: 'Bulk jobs, newest first',
    request: { query: jobsQuery },
    responses: { 200: json(jobsAnswer, 'jobs'), ...refused },
  }),
  show: createRoute({
    method: 'get',
    path: '/jobs/{id}',
    summary:
      "One job's progress (total, processed, failed, status, outcome and times) and its failed items with their reasons",
    request: { params: jobParams },
    responses: { 200: json(jobAnswer, 'the job'), 404: notFound, ...refused },
  }),
  cancel: createRoute({
    method: 'post',
    path: '/jobs/{id}/cancel',
    summary: 'Cancel a queued or running job (it stops before its next batch); a finished job is left as it is',
    request: {
      params: jobParams,
      body: { required: true, content: { 'application/json': { schema: operatorBody } } },
    },
    responses: { 200: json(cancelAnswer, 'the job after'), 404: notFound, ...refused },
  }),
};

export function registerJobRoutes(
  api: OpenAPIHono<DatabaseEnv>,
  deps: { clock: Clock; logger: Logger } & DestinationViewDeps,
): void {
  const destinations = configuredDestinations(deps);
  api.openapi(routes.create, async (c) => {
    const body = c.req.valid('json');
    const now = deps.clock();
    // The request schema is discriminated by kind: each kind arrives with its own filter, times parsed here.
    const spec = { kind: body.kind, filter: { ...body.filter, ...timeRange(body.filter, now) } } as BulkJobSpec;
    for (const { field, name } of namedDestinations(spec)) {
      if (!isConfiguredDestination(destinations, name))
        throw new AppError('invalid_request', { field: `filter.${field}` });
    }
    const result = await createBulkJob(
      { db: c.get('db'), logger: deps.logger, clock: deps.clock },
      { spec, operator: actingOperator(c, body.operator), dryRun: body.dry_run },
    );
    const warnings =
      result.kind === 'created' || result.count > 0 ? await specWarnings(c.get('db'), destinations, spec, now) : [];
    if (result.kind === 'counted') return c.json({ count: result.count, job: null, warnings }, 200);
    return c.json({ count: result.job.total, job: jobJson(result.job), warnings }, 202);
  });

  api.openapi(routes.list, async (c) => {
    const jobs = await listBulkJobs(c.get('db'), c.req.valid('query').limit);
    return c.json({ jobs: jobs.map(jobJson) }, 200);
  });

  api.openapi(routes.show, async (c) => {
    const job = await getBulkJob(c.get('db'), c.req.valid('param').id);
    if (job === undefined) throw new AppError('not_found');
    return c.json(jobWithFailures(job, await listJobFailures(c.get('db'), job.id)), 200);
  });

  api.openapi(routes.cancel, async (c) => {
    const operator = actingOperator(c, c.req.valid('json').operator);
    const result = await cancelBulkJob(
      { db: c.get('db'), logger: deps.logger, clock: deps.clock },
      { id: c.req.valid('param').id, operator },
    );
    if (result.kind === 'not_found') throw new AppError('not_found');
    return c.json({ cancelled: result.kind === 'cancelled', job: jobJson(result.job) }, 200);
  });
}
