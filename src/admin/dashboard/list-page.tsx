// The frame of a list page (events, outbox): counts per status under the other filters, as links, the filter form whose
// values live in the address, the rows, and a pager that keeps every filter. Pure rendering.
import type { Child, FC } from 'hono/jsx';
import type { CountsByStatus } from '../../ops/reads/counts.ts';
import { Status } from './rows.tsx';

/** The choices of a list's "received/created in the last" filter: values of its `since` parameter. */
const SINCE_DURATIONS = ['15m', '1h', '6h', '1d', '7d', '30d'] as const;

const query = (params: Record<string, string | undefined>) => {
  const text = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  ).toString();
  return text === '' ? '' : `?${text}`;
};

/** A count as shown: "10000+" when counting stopped at the cap (ops/reads/counts.ts). */
const figure = (n: number, atLeast: boolean) => (atLeast ? `${n}+` : String(n));

/**
 * Counts per status under the list's other filters, each a link to the list with those filters and
 * that status: a count is what its link lists.
 */
const StatusLinks: FC<{
  base: string;
  counts: CountsByStatus;
  statuses: readonly string[];
  filter: ListPageFilter;
}> = ({ base, counts, statuses, filter }) => (
  <nav class="counts" aria-label="by status">
    <a
      href={`${base}${query({ ...filter, status: undefined })}`}
      aria-current={filter.status === undefined ? 'page' : undefined}
    >
      all{' '}
      <span class="n">
        {figure(
          Object.values(counts.byStatus).reduce((sum, n) => sum + n, 0),
          counts.atLeast.length > 0,
        )}
      </span>
    </a>
    {statuses.map((status) => (
      <a href={`${base}${query({ ...filter, status })}`} aria-current={filter.status === status ? 'page' : undefined}>
        <Status status={status} />{' '}
        <span class="n">{figure(counts.byStatus[status] ?? 0, counts.atLeast.includes(status))}</span>
      </a>
    ))}
  </nav>
);

export const Select: FC<{ name: string; label: string; options: readonly string[]; value?: string; any?: string }> = ({
  name,
  label,
  options,
  value,
  any = 'any',
}) => (
  <label>
    {label}
    <select name={name}>
      <option value="">{any}</option>
      {options.map((option) => (
        <option value={option} selected={option === value}>
          {option}
        </option>
      ))}
    </select>
  </label>
);

/** First and next page of a filtered list: the filters stay in both links. */
const Pager: FC<{ list: string; filter: Record<string, string | undefined>; next: string | null }> = ({
  list,
  filter,
  next,
}) => (
  <nav class="pager" aria-label="pages">
    <a href={`${list}${query(filter)}`}>First page</a>
    {next === null ? (
      <span>Last page</span>
    ) : (
      <a href={`${list}${query({ ...filter, cursor: next })}`} rel="next">
        Next page
      </a>
    )}
  </nav>
);

/**
 * A list's filter form: its own fields, then the time range and the id search every list has. It is
 * a fold whose summary says how many filters are in use: open on a wide screen (the summary hidden),
 * folded on a phone by the page's script, so the rows come first on a small screen.
 */
const FilterForm: FC<{
  list: string;
  noun: string;
  when: string;
  since?: string;
  id?: string;
  inUse: number;
  children: Child;
}> = ({ list, noun, when, since, id, inUse, children }) => (
  <details class="filter-fold" open>
    <summary>{inUse === 0 ? 'Filters' : `Filters (${inUse} in use)`}</summary>
    <form method="get" action={list} class="filters" aria-label="filters">
      {children}
      <Select name="since" label={`${when} in the last`} options={SINCE_DURATIONS} value={since} any="any time" />
      <label>
        {noun} id starts with
        <input name="id" value={id ?? ''} type="search" />
      </label>
      <button type="submit">Filter</button>
      <a href={list}>Clear</a>
    </form>
  </details>
);

/** The filters every list has, as typed in its address: its links (paging, refresh) carry them on. */
export interface ListPageFilter {
  status?: string | undefined;
  id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
}

/** How many filters narrow the list (the page size is not one). */
const filtersInUse = (filter: ListPageFilter) =>
  Object.entries(filter).filter(([name, value]) => name !== 'limit' && value !== undefined && value !== '').length;

/** One of the dashboard's lists: its address and heading, what a row is called, when it counts from, its statuses. */
export interface DashboardList {
  path: string;
  title: string;
  noun: string;
  when: string;
  statuses: readonly string[];
  /** The attribute that names an item on its page, as the list's rows name theirs. */
  itemAttribute: 'data-event' | 'data-message';
}

/**
 * A list page: counts per status as links, the filter form (status, then the list's own `fields`,
 * then time range and id search), the rows, and the pager, which keeps every filter.
 */
export const ListPage: FC<{
  of: DashboardList;
  counts: CountsByStatus;
  filter: ListPageFilter;
  fields: Child;
  next: string | null;
  children: Child;
}> = ({ of: { path, title, noun, when, statuses }, counts, filter, fields, next, children }) => (
  <>
    <h1 tabindex={-1}>{title}</h1>
    <StatusLinks base={path} counts={counts} statuses={statuses} filter={filter} />
    <FilterForm list={path} noun={noun} when={when} since={filter.since} id={filter.id} inUse={filtersInUse(filter)}>
      <Select name="status" label="Status" options={statuses} value={filter.status} />
      {fields}
    </FilterForm>
    {children}
    <Pager list={path} filter={{ ...filter }} next={next} />
  </>
);
