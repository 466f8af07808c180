// The refused deliveries page (/admin/rejections): counts per sender and reason over the chosen time,
// each a link that narrows the page to it, then the most recent refusals the ring keeps, with what
// they failed on and their headers as kept (credentials redacted; bodies are never kept). Pure
// rendering: the route reads the rows (dashboard/routes.tsx).
import type { FC } from 'hono/jsx';
import { rejectionReasons } from '../../lib/rejection-reasons.ts';
import type { RejectionCount, RejectionListing } from '../../ops/reads/rejections.ts';
import { rejectionSenders } from '../api/rejections/schema.ts';
import { Select } from './list-page.tsx';
import { iso, Status } from './rows.tsx';

export const REJECTIONS_PATH = '/admin/rejections';

/** The choices of "refused in the last": values of the page's `since`. */
const SINCE_DURATIONS = ['15m', '1h', '6h', '1d', '7d', '30d'] as const;

export interface RejectionsPageFilter {
  provider?: string | undefined;
  reason?: string | undefined;
  since?: string | undefined;
}

const linkTo = (filter: RejectionsPageFilter) => {
  const query = new URLSearchParams(
    Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  ).toString();
  return query === '' ? REJECTIONS_PATH : `${REJECTIONS_PATH}?${query}`;
};

const CountsTable: FC<{ counts: RejectionCount[]; filter: RejectionsPageFilter }> = ({ counts, filter }) =>
  counts.length === 0 ? (
    <p class="empty">Nothing was refused{filter.since === undefined ? '' : ' in that time'}.</p>
  ) : (
    <table class="rows" id="rejection-counts">
      <thead>
        <tr>
          <th scope="col">reason</th>
          <th scope="col">sender</th>
          <th scope="col">status</th>
          <th scope="col">refused</th>
          <th scope="col">last minute (UTC)</th>
        </tr>
      </thead>
      <tbody>
        {counts.map((count) => (
          <tr data-count={`${count.provider}/${count.reason}`}>
            <td class="id">
              <a href={linkTo({ ...filter, provider: count.provider, reason: count.reason })}>{count.reason}</a>
            </td>
            <td class="provider">{count.provider}</td>
            <td class="status-cell">
              <Status status={count.statusCode === null ? '?' : String(count.statusCode)} />
            </td>
            <td class="attempts" data-label="refused">
              {String(count.n)}
            </td>
            <td class="time">{iso(count.lastMinute).slice(0, 16)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );

/** A refusal's headers as kept: a fold, so the list stays a list. */
const Headers: FC<{ headers: Record<string, string> }> = ({ headers }) => {
  // By name: the database keeps an object's keys in an order of its own.
  const entries = Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return (
    <details class="headers">
      <summary>{`${entries.length} header${entries.length === 1 ? '' : 's'}`}</summary>
      <dl>
        {entries.map(([name, value]) => (
          <>
            <dt>{name}</dt>
            <dd class={value === '[redacted]' ? 'empty' : undefined}>{value}</dd>
          </>
        ))}
      </dl>
    </details>
  );
};

const RecentTable: FC<{ rows: RejectionListing[] }> = ({ rows }) =>
  rows.length === 0 ? (
    <p class="empty">No refusal is kept under these filters.</p>
  ) : (
    <table class="rows" id="recent-rejections">
      <thead>
        <tr>
          <th scope="col">refused (UTC)</th>
          <th scope="col">sender</th>
          <th scope="col">reason</th>
          <th scope="col">status</th>
          <th scope="col">detail</th>
          <th scope="col">headers</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr data-rejection={row.reason}>
            <td class="time">{iso(row.at)}</td>
            <td class="provider">{row.provider}</td>
            <td class="id reason">{row.reason}</td>
            <td class="status-cell">
              <Status status={String(row.statusCode)} />
            </td>
            <td class="detail">{row.detail ?? ''}</td>
            <td class="headers-cell">
              <Headers headers={row.headers} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );

export const RejectionsPage: FC<{
  filter: RejectionsPageFilter;
  counts: RejectionCount[];
  recent: RejectionListing[];
  ringSize: number;
}> = ({ filter, counts, recent, ringSize }) => {
  const total = counts.reduce((sum, count) => sum + count.n, 0);
  return (
    <>
      <h1 tabindex={-1}>Refused deliveries</h1>
      <form method="get" action={REJECTIONS_PATH} class="filters" aria-label="filters">
        <Select name="provider" label="Sender" options={rejectionSenders} value={filter.provider} />
        <Select name="reason" label="Reason" options={rejectionReasons} value={filter.reason} />
        <Select
          name="since"
          label="Refused in the last"
          options={SINCE_DURATIONS}
          value={filter.since}
          any="any time"
        />
        <button type="submit">Filter</button>
        <a href={REJECTIONS_PATH}>Clear</a>
      </form>
      <section aria-labelledby="counts-heading">
        <h2 id="counts-heading">
          By sender and reason: <span id="rejections-total">{String(total)}</span> refused
        </h2>
        <CountsTable counts={counts} filter={filter} />
      </section>
      <section aria-labelledby="recent-heading">
        <h2 id="recent-heading">Most recent</h2>
        <p class="note">
          {`The newest ${ringSize} refusals are kept, never their bodies; credentials in headers show as [redacted].`}
        </p>
        <RecentTable rows={recent} />
      </section>
    </>
  );
};
