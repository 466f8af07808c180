// The operator dashboard under /admin: server-rendered with hono/jsx, no front-end build. Pages: the
// overview (charts drawn as inline SVG, what needs attention), events (filters, search, paging), one
// event (payload, outbox messages, replay), the outbox and one message (retry). Every page shows the
// time it was read ("as of") and a Refresh that keeps the filters, which live in the address.
//
// Authentication without anything a browser sends by itself (no cookie, no Basic auth), so another
// site cannot make the operator's browser act (CSRF): every /admin request needs
// `Authorization: Bearer ADMIN_TOKEN`, like the API. A plain navigation carries no such header, so
// any GET of a dashboard page without one gets a 401 whose body is the sign-in page; its one script
// (dashboard-script.ts) keeps the token in sessionStorage (this tab only, gone when it closes) and
// fetches pages and posts actions with the header. A cross-site page can neither read the token nor
// attach the header (a custom header needs a CORS preflight, which is never granted).
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Child, FC } from 'hono/jsx';
import type { z } from 'zod';
import type { DatabaseEnv } from '../db/client.ts';
import { getEvent, listEvents, statusCounts } from '../ops/events.ts';
import { OPERATOR_NAME_MAX } from '../ops/operator-name.ts';
import { getOutboxMessage, listOutbox, messagesOfEvent } from '../ops/outbox-view.ts';
import { readOverview, windowEndingAt } from '../ops/overview.ts';
import { timeRange } from '../ops/time-bound.ts';
import { isMessageId } from '../outbox/operator.ts';
import { allProviders } from '../providers/registry.ts';
import { ADMIN_API_BASE, type AdminDeps } from './api.ts';
import { EventPage, EventsPage, MessagePage, OutboxPage, OverviewPage } from './dashboard-pages.tsx';
import { DASHBOARD_SCRIPT } from './dashboard-script.ts';
import { EVENT_BY_QUERY } from './event-urls.ts';
import { logPayloadRead } from './operators.ts';
import { DEFAULT_LIMIT, eventsQuery, outboxQuery } from './schemas.ts';

const ATTENTION_ROWS = 10;
const RANGES = {
  hour: { bucketMs: 60_000, buckets: 60 },
  day: { bucketMs: 15 * 60_000, buckets: 96 },
} as const;

const STYLE = `
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa;line-height:1.4}
a{color:#0b57d0}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible,main:focus-visible{outline:3px solid #f9a825;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:.5rem;top:.5rem;background:#fff;padding:.3rem;z-index:2}
header{background:#fff;border-bottom:1px solid #ddd;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center}
header .brand{font-weight:700}header nav{display:flex;gap:1rem}header nav a[aria-current]{font-weight:700;text-decoration:none;color:#1d1d1f}
.session{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-left:auto;font-size:.9rem}
.session #operator{width:9rem}
main{padding:1rem;max-width:1200px;margin:0 auto}main:focus{outline:none}
h1{font-size:1.4rem;margin:.2rem 0 .8rem}h1.id,.id{overflow-wrap:anywhere}h2{font-size:1.1rem;margin:1.4rem 0 .5rem}
#notice{margin:0;padding:0 1rem;font-weight:600}#notice.ok{color:#1b5e20}#notice.warn{color:#8a5300}#notice.error{color:#b71c1c}
#notice:not(:empty){padding:.4rem 1rem;background:#fff;border-bottom:1px solid #ddd}
.as-of{color:#555}
button{font:inherit;padding:.25rem .7rem;border:1px solid #888;border-radius:4px;background:#fff;cursor:pointer}
input,select{font:inherit;padding:.2rem .3rem;max-width:100%}
.status{display:inline-block;padding:0 .4rem;border-radius:3px;font-size:.85rem;color:#fff;background:#616161}
.s-completed,.s-published{background:#2e7d32}.s-ignored{background:#757575}.s-received,.s-processing,.s-pending{background:#1565c0}
.s-failed{background:#e65100}.s-parked{background:#6a1b9a}.s-dead_letter,.s-dead{background:#b71c1c}
.counts,.tabs{display:flex;flex-wrap:wrap;gap:.4rem .9rem;margin:.3rem 0 .8rem}.counts a,.tabs a{text-decoration:none;padding:.15rem .3rem;border-radius:4px}
.counts a[aria-current],.tabs a[aria-current]{outline:2px solid #0b57d0}
.filters{display:flex;flex-wrap:wrap;gap:.5rem .8rem;align-items:flex-end;margin-bottom:.8rem}.filters label{display:flex;flex-direction:column;font-size:.85rem}
table.rows{border-collapse:collapse;width:100%;background:#fff}
.rows td,.rows th{border-bottom:1px solid #e0e0e0;padding:.3rem .5rem;text-align:left;font-size:.9rem;vertical-align:top}.rows th{background:#f0f0f0}
.error{color:#b71c1c;overflow-wrap:anywhere}.rows td.error{max-width:26rem}.rows td.time{white-space:nowrap}.rows td.id{min-width:12rem;overflow-wrap:anywhere}.empty,.note{color:#555}.note{font-size:.85rem}
.pager{display:flex;gap:1.5rem;margin:.8rem 0}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.6rem;margin-bottom:1rem}
.figures div{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.5rem .7rem;display:flex;flex-direction:column}
.figures strong{font-size:1.5rem}.label{font-size:.85rem;color:#555}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem}
figure{margin:0;background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.6rem}figcaption{font-weight:600;font-size:.95rem}
svg.chart{width:100%;height:auto;display:block}svg.chart text{font-size:14px;fill:#555}svg.chart .grid{stroke:#e0e0e0}
.legend{display:flex;flex-wrap:wrap;gap:.2rem .8rem;list-style:none;padding:0;margin:.3rem 0 0;font-size:.85rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.1rem;border-radius:2px}
dl.fields{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.7rem}
dl.fields dt{color:#555}dl.fields dd{margin:0;overflow-wrap:anywhere}
.act{display:flex;flex-wrap:wrap;gap:.8rem;align-items:center;margin:.8rem 0}
details.payload{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.5rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.5rem 0 0;font-size:.85rem}
#sign-in{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}#sign-in label{display:flex;flex-direction:column}
@media (max-width:700px){
  .rows thead{position:absolute;left:-9999px}
  .rows tr{display:block;border:1px solid #e0e0e0;border-radius:6px;margin-bottom:.6rem;background:#fff}
  .rows td{display:grid;grid-template-columns:6.5rem 1fr;gap:.5rem;border:0;padding:.2rem .5rem;overflow-wrap:anywhere;justify-items:start}
  .rows td.id,.rows td.time{min-width:0;white-space:normal}.rows td.error{max-width:none}
  .rows td::before{content:attr(data-label);color:#555}
  dl.fields{grid-template-columns:1fr}dl.fields dd{margin-bottom:.3rem}
  .session{margin-left:0}
}`;

const stamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);

const Layout: FC<{ nonce: string; title: string; asOfMs?: number; current?: string; children: Child }> = ({
  nonce,
  title,
  asOfMs,
  current,
  children,
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${title} · Webhook Inbox`}</title>
      <style>{STYLE}</style>
      <script nonce={nonce} dangerouslySetInnerHTML={{ __html: DASHBOARD_SCRIPT }} />
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <p id="notice" role="status" />
      <div id="app">
        <header>
          <span class="brand">Webhook Inbox</span>
          {asOfMs === undefined ? null : (
            <>
              <nav aria-label="sections">
                {(
                  [
                    ['/admin', 'Overview'],
                    ['/admin/events', 'Events'],
                    ['/admin/outbox', 'Outbox'],
                  ] as const
                ).map(([href, label]) => (
                  <a href={href} aria-current={current === href ? 'page' : undefined}>
                    {label}
                  </a>
                ))}
              </nav>
              <div class="session">
                <span class="as-of">
                  As of <time datetime={new Date(asOfMs).toISOString()}>{stamp(asOfMs)} UTC</time>
                </span>
                <button type="button" id="refresh">
                  Refresh
                </button>
                <label>
                  <input type="checkbox" id="auto-refresh" /> every 30 s
                </label>
                <label>
                  Operator{' '}
                  <input id="operator" autocomplete="name" placeholder="your name" maxlength={OPERATOR_NAME_MAX} />
                </label>
                <button type="button" id="sign-out">
                  Sign out
                </button>
              </div>
            </>
          )}
        </header>
        <main id="main" tabindex={-1}>
          {children}
        </main>
      </div>
    </body>
  </html>
);

const SignIn: FC = () => (
  <>
    <h1 tabindex={-1}>Sign in</h1>
    <form id="sign-in">
      <label>
        Admin token (ADMIN_TOKEN)
        <input name="token" type="password" autocomplete="off" required />
      </label>
      <button type="submit">Sign in</button>
    </form>
    <p class="note">The token is kept in this tab only, until it closes.</p>
  </>
);

function newNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes));
}

/** Headers of every dashboard answer: only our nonce'd script runs, nothing is cached or framed. */
function secured(c: Context, nonce: string): void {
  c.header(
    'content-security-policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; ` +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  c.header('cache-control', 'no-store');
  c.header('referrer-policy', 'no-referrer');
  c.header('x-content-type-options', 'nosniff');
}

/**
 * The sign-in page, answered with 401 to a GET of any dashboard page that carries no Authorization
 * header (a browser's navigation). Registered before the bearer gate; any request with a header,
 * and everything under /admin/api, meets the gate.
 */
export function dashboardSignIn(): (c: Context, next: () => Promise<void>) => Promise<Response | undefined> {
  return async (c, next) => {
    const page =
      c.req.path === '/admin' || (c.req.path.startsWith('/admin/') && !c.req.path.startsWith(`${ADMIN_API_BASE}/`));
    if (c.req.method === 'GET' && page && c.req.header('authorization') === undefined) {
      const nonce = newNonce();
      secured(c, nonce);
      return c.html(
        <Layout nonce={nonce} title="Sign in">
          <SignIn />
        </Layout>,
        401,
      );
    }
    await next();
    return undefined;
  };
}

/**
 * The filters a list page keeps in its links (paging, refresh), as they were typed; the page size
 * only when it is not the default, so ordinary addresses stay short.
 */
function kept<Filter extends { limit: number }>(filter: Filter): Omit<Filter, 'limit'> & { limit?: string } {
  const { limit, ...rest } = filter;
  return limit === DEFAULT_LIMIT ? rest : { ...rest, limit: String(limit) };
}

/** The query without empty fields (a filter form's blank inputs), parsed by the API's own schema. */
function parseQuery<Schema extends z.ZodType>(c: Context, schema: Schema): z.infer<Schema> | { refused: string } {
  const present = Object.fromEntries(Object.entries(c.req.query()).filter(([, value]) => value.trim() !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.code === 'unrecognized_keys' ? issue.keys[0] : issue?.path[0];
  return { refused: String(field ?? 'query') };
}

export function dashboardRoutes(deps: AdminDeps): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  const eventProviders = allProviders.map((provider) => provider.name);

  const page = (
    c: Context<DatabaseEnv>,
    title: string,
    current: string | undefined,
    body: Child,
    status: 200 | 400 | 404 = 200,
  ) => {
    const nonce = newNonce();
    secured(c, nonce);
    return c.html(
      <Layout nonce={nonce} title={title} asOfMs={deps.clock()} current={current}>
        {body}
      </Layout>,
      status,
    );
  };
  const refused = (c: Context, current: string, field: string) =>
    page(
      c,
      'Refused',
      current,
      <>
        <h1 tabindex={-1}>That filter was refused</h1>
        <p class="error">
          The value of <strong>{field}</strong> is not one this page accepts.
        </p>
        <p>
          <a href={current}>Start again</a>
        </p>
      </>,
      400,
    );
  const missing = (c: Context, current: string, what: string) =>
    page(
      c,
      'Not found',
      current,
      <>
        <h1 tabindex={-1}>Not found</h1>
        <p>No {what} has that id.</p>
        <p>
          <a href={current}>Back to the list</a>
        </p>
      </>,
      404,
    );

  routes.get('/', async (c) => {
    const range = c.req.query('range') === 'day' ? 'day' : 'hour';
    const nowMs = deps.clock();
    const window = windowEndingAt(nowMs, RANGES[range].bucketMs, RANGES[range].buckets);
    const [overview, counts, failed, parked, dead] = await Promise.all([
      readOverview(c.var.db, window, nowMs),
      statusCounts(c.var.db),
      ...(['failed', 'parked', 'dead_letter'] as const).map((status) =>
        listEvents(c.var.db, { status, limit: ATTENTION_ROWS }),
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
        counts={counts.events}
        attention={attention}
      />,
    );
  });

  routes.get('/events', async (c) => {
    const parsed = parseQuery(c, eventsQuery);
    if ('refused' in parsed) return refused(c, '/admin/events', parsed.refused);
    const { cursor, ...filter } = parsed;
    const [listed, counts] = await Promise.all([
      listEvents(c.var.db, { ...filter, ...timeRange(filter, deps.clock()), cursor }),
      statusCounts(c.var.db),
    ]);
    const view = <EventsPage filter={kept(filter)} providers={eventProviders} counts={counts.events} page={listed} />;
    return page(c, 'Events', '/admin/events', view);
  });

  const eventPage = async (c: Context<DatabaseEnv>, key: { provider: string; eventId: string }) => {
    const [event, messages] = await Promise.all([
      getEvent(c.var.db, key, { payload: true }),
      messagesOfEvent(c.var.db, key),
    ]);
    if (event === undefined) return missing(c, '/admin/events', 'event');
    logPayloadRead(c, deps.logger, { kind: 'event', ...key });
    return page(c, `${key.provider}/${key.eventId}`, '/admin/events', <EventPage event={event} messages={messages} />);
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
    const { cursor, ...filter } = parsed;
    const [listed, counts] = await Promise.all([
      listOutbox(c.var.db, { ...filter, ...timeRange(filter, deps.clock()), cursor }),
      statusCounts(c.var.db),
    ]);
    return page(
      c,
      'Outbox',
      '/admin/outbox',
      <OutboxPage filter={kept(filter)} counts={counts.outbox} page={listed} />,
    );
  });

  routes.get('/outbox/:id', async (c) => {
    const id = c.req.param('id');
    const message = isMessageId(id) ? await getOutboxMessage(c.var.db, id, { payload: true }) : undefined;
    if (message === undefined) return missing(c, '/admin/outbox', 'message');
    logPayloadRead(c, deps.logger, { kind: 'outbox', id });
    return page(c, `Message ${id}`, '/admin/outbox', <MessagePage message={message} />);
  });

  return routes;
}
