// Bulk jobs on the dashboard: the "Replay all N matching" / "Retry all N matching" control a list
// page shows under a filter the action takes (the page's script counts exactly with a dry run, asks
// to confirm, then creates the job through the admin API), the jobs page (/admin/jobs): each
// job's outcome, progress, filter and times, with Cancel while it is unfinished, and one job's page
// (/admin/jobs/:id): the same, and its failed items with their reasons, each linking to its row's
// page. Pure rendering.
import type { FC } from 'hono/jsx';
import type { BulkJobKind } from '../../db/schema.ts';
import { JOB_FAILURES_KEPT } from '../../db/schema.ts';
import { type BulkJob, type JobFailure, jobOutcome, UNFINISHED } from '../../ops/jobs/bulk-jobs.ts';
import { type FilterJson, JOB_KINDS } from '../../ops/jobs/job-kinds.ts';
import { failurePage } from '../api/jobs/route.ts';
import { ActionForm, Field } from './item-page.tsx';
import type { ListPageFilter } from './list-page.tsx';
import { ColumnHeads, iso } from './rows.tsx';

/** The list filter as the API takes it: what the page's address holds, page size aside. */
const bulkFilter = (filter: ListPageFilter): FilterJson =>
  Object.fromEntries(
    Object.entries(filter).filter(
      (entry): entry is [string, string] => entry[0] !== 'limit' && typeof entry[1] === 'string' && entry[1] !== '',
    ),
  );

/**
 * The form a list shows when its filter selects rows the action takes: the list's own count on the
 * button ("10000+" when that count stopped at its cap); the exact count comes in the confirmation.
 */
export const BulkControl: FC<{
  kind: BulkJobKind;
  filter: ListPageFilter;
  count: number;
  atLeast: boolean;
}> = ({ kind, filter, count, atLeast }) => {
  if (count === 0) return null;
  const { verb, noun } = JOB_KINDS[kind];
  return (
    <form
      method="post"
      class="bulk"
      data-bulk={kind}
      data-verb={verb}
      data-noun={noun}
      data-filter={JSON.stringify(bulkFilter(filter))}
    >
      <button type="submit">{`${verb} all ${count}${atLeast ? '+' : ''} matching`}</button>
      <span class="note">
        As a job: counted exactly and confirmed first; it runs in batches and survives a restart (see Jobs).
      </span>
    </form>
  );
};

/** The kind in words. */
const kindWords = (job: BulkJob) => JOB_KINDS[job.kind].label;

/** The job's filter, one `name=value` a line. */
const FilterLines: FC<{ filter: unknown }> = ({ filter }) => (
  <>
    {Object.entries(filter as FilterJson).map(([name, value]) => (
      <div>{`${name}=${value}`}</div>
    ))}
  </>
);

/** A job's page, where its failed items are listed. */
const jobPath = (job: BulkJob) => `/admin/jobs/${job.id}`;

const Progress: FC<{ job: BulkJob }> = ({ job }) => (
  <span class="progress">
    <progress max={Math.max(job.total, 1)} value={job.processed} /> {`${job.processed} / ${job.total}`}
    {job.failed > 0 ? (
      <>
        {' · '}
        <a class="error" href={`${jobPath(job)}#failures`}>{`${job.failed} ${JOB_KINDS[job.kind].failedAre}`}</a>
      </>
    ) : null}
  </span>
);

/**
 * The job's status as an operator reads it (jobOutcome): done with failures is no green badge. In
 * words (spaces, not underscores), so that the badge can wrap in a narrow column.
 */
const Outcome: FC<{ job: BulkJob }> = ({ job }) => {
  const outcome = jobOutcome(job);
  return <span class={`status s-${outcome}`}>{outcome.replaceAll('_', ' ')}</span>;
};

const Finished: FC<{ job: BulkJob }> = ({ job }) =>
  UNFINISHED.includes(job.status) ? (
    <ActionForm action={`/admin/api/jobs/${job.id}/cancel`} target={job.id} kind="cancel" label="Cancel" />
  ) : (
    <span class="note">{`finished ${iso(job.finishedAt)}`}</span>
  );

const operatorOf = (job: BulkJob) =>
  job.cancelledBy === null ? job.operator : `${job.operator} (cancelled by ${job.cancelledBy})`;

export const JobsPage: FC<{ jobs: BulkJob[] }> = ({ jobs }) => (
  <>
    <h1 tabindex={-1}>Jobs</h1>
    <p class="note">
      Bulk replays and retries, newest first. A job takes only the rows that existed when it was created, a batch at a
      time; Cancel stops it before its next batch.
    </p>
    {jobs.length === 0 ? (
      <p class="empty">No job yet: filter the events or the outbox list, then Replay all or Retry all.</p>
    ) : (
      <table class="rows jobs">
        <ColumnHeads headers={['created (UTC)', 'job', 'kind', 'status', 'progress', 'filter', 'operator', '']} />
        <tbody>
          {jobs.map((job) => (
            <tr data-job={job.id}>
              <td data-label="created" class="time">
                {iso(job.createdAt)}
              </td>
              <td data-label="job" class="id">
                <a href={jobPath(job)}>{job.id}</a>
              </td>
              <td data-label="kind" class="type">
                {kindWords(job)}
              </td>
              <td data-label="status" class="status-cell">
                <Outcome job={job} />
              </td>
              <td data-label="progress" class="job-progress">
                <Progress job={job} />
                {job.lastError === null ? null : <div class="error">{job.lastError}</div>}
              </td>
              <td data-label="filter" class="job-filter">
                <FilterLines filter={job.filter} />
              </td>
              <td data-label="operator" class="provider">
                {operatorOf(job)}
              </td>
              <td data-label="" class="job-act">
                <Finished job={job} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
  </>
);

/** One job: its fields, then its failed items with their reasons, each linking to its row's page. */
export const JobPage: FC<{ job: BulkJob; failures: readonly JobFailure[] }> = ({ job, failures }) => (
  <>
    <p class="crumbs">
      <a href="/admin/jobs">Jobs</a> / {kindWords(job)}
    </p>
    <h1 tabindex={-1} class="id">
      {job.id}
    </h1>
    <dl class="fields" data-job={job.id}>
      <Field name="status">
        <Outcome job={job} />
      </Field>
      <Field name="kind">{kindWords(job)}</Field>
      <Field name="progress">
        <Progress job={job} />
      </Field>
      {job.lastError === null ? null : (
        <Field name="last error">
          <span class="error">{job.lastError}</span>
        </Field>
      )}
      <Field name="filter">
        <FilterLines filter={job.filter} />
      </Field>
      <Field name="operator">{operatorOf(job)}</Field>
      <Field name="created (UTC)">{iso(job.createdAt)}</Field>
      <Field name="started (UTC)">{iso(job.startedAt)}</Field>
      <Field name="finished (UTC)">{iso(job.finishedAt)}</Field>
    </dl>
    <div class="act">
      <Finished job={job} />
    </div>
    <h2 id="failures">{`Failed items (${job.failed})`}</h2>
    <FailedItems job={job} failures={failures} />
  </>
);

const FailedItems: FC<{ job: BulkJob; failures: readonly JobFailure[] }> = ({ job, failures }) => {
  // A kind whose `failed` are skips keeps none (a copy's: a message the destination has or refuses).
  if (JOB_KINDS[job.kind].failedAre === 'skipped') {
    return <p class="note">A copy lists no items: a message it skipped is one the destination has or refuses.</p>;
  }
  if (failures.length === 0) return <p class="empty">None.</p>;
  return (
    <>
      <p class="note">
        {job.failed > failures.length
          ? `The first ${failures.length} of ${job.failed}, with why; a job keeps ${JOB_FAILURES_KEPT}.`
          : 'Each item the action could not change, with why.'}
      </p>
      <table class="rows failures">
        <ColumnHeads headers={['item', 'why', 'at (UTC)']} />
        <tbody>
          {failures.map((failure) => (
            <tr data-failed={failure.target}>
              <td data-label="item" class="id">
                <a href={failurePage(failure)}>{failure.target}</a>
              </td>
              <td data-label="why" class="error">
                {failure.reason}
              </td>
              <td data-label="at" class="time">
                {iso(failure.at)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
};
