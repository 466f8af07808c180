// The operator dashboard's routes under /admin: which address shows which page, and what each reads
// from src/ops. Server-rendered with hono/jsx, no front-end build. Pages: the overview (charts drawn
// as inline SVG, what needs attention), events (filters, search, paging), one event (payload, outbox
// messages, replay), the outbox and one message (retry, per-destination outcomes), the senders (pause,
// resume), the outbox's destinations (state, backlog, pause, resume), the bulk jobs
// (progress, cancel) and the refused deliveries. Every page shows the time it was read ("as of") and
// a Refresh that keeps the filters, which live in the address. A list's query is checked by the API's
// own schema and a refusal names the field the API would (refusedField).
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { z } from 'zod';
import type { DatabaseEnv } from '../../db/client.ts';
import { deliveriesOf } from '../../inbox/delivery-log.ts';
import { REJECTION_RING_SIZE } from '../../inbox/rejection-log.ts';
import { refusedField } from '../../lib/errors.ts';
import { getBulkJob, listBulkJobs, listJobFailures } from '../../ops/jobs/bulk-jobs.ts';
import { activePauses, listSenders } from '../../ops/pauses/sender-pauses.ts';
import { readListing } from '../../ops/reads/cursor.ts';
import {
  destinationWaits,
  isConfiguredDestination,
  listDestinations,
  waitingOf,
} from '../../ops/reads/destinations-view.ts';
import { countEventsByStatus, getEvent, listEvents } from '../../ops/reads/events.ts';
import {
  countOutboxByStatus,
  getOutboxMessage,
  listOutbox,
  messagesOfEvent,
  siblingsOf,
} from '../../ops/reads/outbox-view.ts';
import { readOverview, windowEndingAt } from '../../ops/reads/overview.ts';
import { countRejections, listRejections } from '../../ops/reads/rejections.ts';
import { timeRange } from '../../ops/reads/time-bound.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { allSenders } from '../../senders/registry.ts';
import type { AdminDeps } from '../api/api.ts';
import { configuredDestinations } from '../api/destinations/route.ts';
import { eventsQuery } from '../api/events/schema.ts';
import { outboxQuery } from '../api/outbox/schema.ts';
import { rejectionsQuery } from '../api/rejections/schema.ts';
import { DEFAULT_LIMIT } from '../api/schemas.ts';
import { EVENT_BY_QUERY } from '../event-urls.ts';
import { logPayloadRead } from '../operators.ts';
import { DESTINATIONS_PATH, DestinationsPage } from './destinations-page.tsx';
import { EventPage, EventsPage } from './events-pages.tsx';
import { securedPage } from './gate.tsx';
import { JobPage, JobsPage } from './jobs-page.tsx';
import { MessagePage, OutboxPage } from './outbox-pages.tsx';
import { OverviewPage } from './overview-page.tsx';
import { NotFoundPage, type Refusal, RefusedFilterPage } from './refusal-pages.tsx';
import { REJECTIONS_PATH, RejectionsPage } from './rejections-page.tsx';
import { SendersPage } from './senders-page.tsx';

/** Jobs the jobs page shows, newest first. */
const JOBS_SHOWN = 50;

/** Rows of the overview's "Needs attention" table. */
const ATTENTION_ROWS = 10;

/** The overview's two time windows (`?range=hour|day`): the length of each chart bucket and how many. */
const OVERVIEW_WINDOWS = {
  hour: { bucketMs: 60_000, buckets: 60 },
  day: { bucketMs: 15 * 60_000, buckets: 96 },
} as const;

/**
 * The filters a list page keeps in its links (paging, refresh), as they were typed; the page size
 * only when it is not the default, so ordinary addresses stay short.
 */
function kept<Filter extends { limit: number }>(filter: Filter): Omit<Filter, 'limit'> & { limit?: string } {
  const { limit, ...rest } = filter;
  return limit === DEFAULT_LIMIT ? rest : { ...rest, limit: String(limit) };
}

/**
 * The query without empty fields (a filter form's blank inputs), parsed by the API's own schema; a
 * refusal names the field by the API's rule, so both surfaces name the same one.
 */
function parseQuery<Schema extends z.ZodType>(c: Context, schema: Schema): z.infer<Schema> | { refused: Refusal } {
  const present = Object.fromEntries(Object.entries(c.req.query()).filter(([, value]) => value.trim() !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  // refusedField names an unknown parameter before a bad value, so the page says which it was.
  const unknown = parsed.error.issues.some((issue) => issue.code === 'unrecognized_keys');
  return { refused: { field: refusedField(parsed.error) ?? 'query', unknown } };
}

export function dashboardRoutes(deps: AdminDeps): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  // The provider filter offers the senders this service accepts (in the registry's order), not all it
  // could: a filter already set to another (events kept from before its secret was removed) stays.
  const enabledNames = allSenders.map((provider) => provider.name).filter((name) => deps.enabledSenders.has(name));
  const eventProviders = (selected: string | undefined) =>
    selected === undefined || enabledNames.includes(selected) ? enabledNames : [...enabledNames, selected];
  const destinations = configuredDestinations(deps);
  const destinationNames = destinations.destinations.map((destination) => destination.name);

  const page = (
    c: Context<DatabaseEnv>,
    title: string,
    current: string | undefined,
    body: Child,
    status: 200 | 400 | 404 = 200,
  ) => securedPage(c, { title, asOfMs: deps.clock(), current }, body, status);
  const refused = (c: Context, list: string, refusal: Refusal) =>
    page(c, 'Refused', list, <RefusedFilterPage list={list} refusal={refusal} />, 400);
  const missing = (c: Context, list: string, what: string) =>
    page(c, 'Not found', list, <NotFoundPage list={list} what={what} />, 404);

  routes.get('/', async (c) => {
    const range = c.req.query('range') === 'day' ? 'day' : 'hour';
    const nowMs = deps.clock();
    const window = windowEndingAt(nowMs, OVERVIEW_WINDOWS[range].bucketMs, OVERVIEW_WINDOWS[range].buckets);
    const [overview, paused, views, failed, parked, dead] = await Promise.all([
      readOverview(c.get('db'), window, nowMs),
      activePauses(c.get('db'), nowMs),
      listDestinations(c.get('db'), destinations, nowMs, { rate: false }),
      ...(['failed', 'parked', 'dead_letter'] as const).map((status) =>
        listEvents(c.get('db'), { status, limit: ATTENTION_ROWS }),
      ),
    ]);
    const attention = [failed, parked, dead]
      .flatMap((found) => found?.rows ?? [])
      .sort((a, b) => b.receivedAt.getTime() - a.receivedAt.getTime())
      .slice(0, ATTENTION_ROWS);
    return page(
      c,
      'Overview',
      '/admin',
      <OverviewPage
        range={range}
        overview={overview}
        latency={deps.metrics.latencyQuantiles(window)}
        counts={overview.counts}
        attention={attention}
        paused={paused}
        destinations={views}
      />,
    );
  });

  routes.get('/events', async (c) => {
    const parsed = parseQuery(c, eventsQuery);
    if ('refused' in parsed) return refused(c, '/admin/events', parsed.refused);
    const { cursor: _, ...filter } = parsed;
    // Counted on every page: the page shows the counts of its whole filter.
    const listing = await readListing(c.get('db'), parsed, deps.clock(), listEvents, countEventsByStatus);
    const view = (
      <EventsPage
        filter={kept(filter)}
        providerNames={eventProviders(filter.provider)}
        counts={listing.counts}
        page={listing.page}
      />
    );
    return page(c, 'Events', '/admin/events', view);
  });

  const eventPage = async (c: Context<DatabaseEnv>, key: { provider: string; eventId: string }) => {
    const [event, messages, deliveries] = await Promise.all([
      getEvent(c.get('db'), key, { payload: true }),
      messagesOfEvent(c.get('db'), key),
      deliveriesOf(c.get('db'), key),
    ]);
    if (event === undefined) return missing(c, '/admin/events', 'event');
    logPayloadRead(c, deps.logger, { kind: 'event', ...key });
    const content = <EventPage event={event} messages={messages} deliveries={deliveries} />;
    return page(c, `${key.provider}/${key.eventId}`, '/admin/events', content);
  };
  routes.get('/events/:provider/:eventId', (c) =>
    eventPage(c, { provider: c.req.param('provider'), eventId: c.req.param('eventId') }),
  );
  // The query form (src/admin/event-urls.ts): ids such as `.` and `..` that no path can carry.
  routes.get(EVENT_BY_QUERY.dashboard.slice('/admin'.length), (c) =>
    eventPage(c, { provider: c.req.query('provider') ?? '', eventId: c.req.query('event_id') ?? '' }),
  );

  routes.get('/outbox', async (c) => {
    const parsed = parseQuery(c, outboxQuery);
    if ('refused' in parsed) return refused(c, '/admin/outbox', parsed.refused);
    if (parsed.destination !== undefined && !isConfiguredDestination(destinations, parsed.destination)) {
      return refused(c, '/admin/outbox', { field: 'destination', unknown: false });
    }
    const { cursor: _, ...filter } = parsed;
    const listing = await readListing(c.get('db'), parsed, deps.clock(), listOutbox, countOutboxByStatus);
    const waits = await destinationWaits(c.get('db'), listing.page.rows);
    const view = (
      <OutboxPage
        filter={kept(filter)}
        counts={listing.counts}
        page={listing.page}
        destinationNames={destinationNames}
        waits={waits}
      />
    );
    return page(c, 'Outbox', '/admin/outbox', view);
  });

  routes.get('/outbox/:id', async (c) => {
    const id = c.req.param('id');
    const message = isMessageId(id) ? await getOutboxMessage(c.get('db'), id, { payload: true }) : undefined;
    if (message === undefined) return missing(c, '/admin/outbox', 'message');
    logPayloadRead(c, deps.logger, { kind: 'outbox', id });
    const [siblings, waits] = await Promise.all([
      siblingsOf(c.get('db'), message),
      destinationWaits(c.get('db'), [message]),
    ]);
    const view = <MessagePage message={message} siblings={siblings} waiting={waitingOf(message, waits)} />;
    return page(c, `Message ${id}`, '/admin/outbox', view);
  });

  routes.get('/senders', async (c) => {
    const senders = await listSenders(c.get('db'), deps.enabledSenders.keys(), deps.clock());
    return page(c, 'Senders', '/admin/senders', <SendersPage senders={senders} />);
  });
  routes.get(DESTINATIONS_PATH.slice('/admin'.length), async (c) => {
    const views = await listDestinations(c.get('db'), destinations, deps.clock());
    return page(c, 'Destinations', DESTINATIONS_PATH, <DestinationsPage destinations={views} />);
  });
  routes.get('/jobs', async (c) =>
    page(c, 'Jobs', '/admin/jobs', <JobsPage jobs={await listBulkJobs(c.get('db'), JOBS_SHOWN)} />),
  );
  routes.get('/jobs/:id', async (c) => {
    const job = await getBulkJob(c.get('db'), c.req.param('id'));
    if (job === undefined) return missing(c, '/admin/jobs', 'job');
    const failures = await listJobFailures(c.get('db'), job.id);
    return page(c, `Job ${job.id}`, '/admin/jobs', <JobPage job={job} failures={failures} />);
  });
  routes.get('/rejections', async (c) => {
    const parsed = parseQuery(c, rejectionsQuery);
    if ('refused' in parsed) return refused(c, REJECTIONS_PATH, parsed.refused);
    const { limit, ...filter } = parsed;
    const selection = { ...filter, ...timeRange(filter, deps.clock()) };
    const [counts, recent] = await Promise.all([
      countRejections(c.get('db'), selection),
      listRejections(c.get('db'), { ...selection, limit }),
    ]);
    const view = <RejectionsPage filter={filter} counts={counts} recent={recent} ringSize={REJECTION_RING_SIZE} />;
    return page(c, 'Refused deliveries', REJECTIONS_PATH, view);
  });

  return routes;
}
