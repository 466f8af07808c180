// The operator dashboard at /admin: server-rendered with hono/jsx, no front-end build. It shows the
// backlog and its oldest ages, counts by status, recent failures, parked and dead events and dead
// outbox messages, each with a replay or retry form that names the operator.
//
// Authentication without anything a browser sends by itself (no cookie, no Basic auth), so another
// site cannot make the operator's browser act (CSRF): every /admin request needs
// `Authorization: Bearer ADMIN_TOKEN`, like the API. A plain navigation to /admin carries no such
// header, so it gets a 401 whose body is a sign-in page; its one script keeps the token in
// sessionStorage (this tab only, gone when it closes), fetches the dashboard with the header, and
// sends each form to the JSON API with the header too. A cross-site page can neither read the token
// nor attach the header (a custom header needs a CORS preflight, which is never granted).
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Child, FC } from 'hono/jsx';
import type { DatabaseEnv } from '../db/client.ts';
import { type EventListing, listEvents, type StatusCounts, statusCounts } from '../ops/events.ts';
import { listOutbox, type OutboxListing } from '../outbox/operator.ts';

const ROWS_PER_SECTION = 25;

/** The page's one script (served with a per-response CSP nonce): sign-in, loading, actions. */
const SCRIPT = `
const KEY = 'webhook-inbox-admin-token';
const auth = () => { const t = sessionStorage.getItem(KEY); return t ? { authorization: 'Bearer ' + t } : {}; };
const say = (text) => { const n = document.getElementById('notice'); if (n) n.textContent = text; };
async function load(message) {
  const res = await fetch('/admin', { headers: auth(), cache: 'no-store' });
  if (res.status === 401) { sessionStorage.removeItem(KEY); say(message || 'Sign in with the admin token.'); return; }
  const page = new DOMParser().parseFromString(await res.text(), 'text/html');
  document.querySelector('main').replaceWith(page.querySelector('main'));
  if (message) say(message);
}
// A reload in the same tab signs in again by itself while the tab keeps the token.
document.addEventListener('DOMContentLoaded', () => {
  if (sessionStorage.getItem(KEY) && document.getElementById('sign-in')) load('');
});
document.addEventListener('submit', async (event) => {
  const form = event.target;
  if (form.id === 'sign-in') {
    event.preventDefault();
    sessionStorage.setItem(KEY, form.elements.token.value);
    await load('');
    return;
  }
  const action = form.getAttribute('data-action');
  if (!action) return;
  event.preventDefault();
  const operator = form.elements.operator.value;
  const res = await fetch(action, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ operator }),
  });
  const body = await res.json().catch(() => ({}));
  const target = form.getAttribute('data-target');
  const after = body.event ? body.event.status : body.message ? body.message.status : body.error;
  await load(res.ok ? target + ': ' + after : target + ': refused (' + (body.error || res.status) + ')');
});
`;

const Layout: FC<{ nonce: string; children: Child }> = ({ nonce, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Webhook Inbox: operations</title>
      <style>{`body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:left;font-size:.9rem}th{background:#f4f4f4}
#notice{min-height:1.2rem;color:#0a5}.error{color:#a00;max-width:28rem;overflow-wrap:anywhere}form{display:flex;gap:.3rem;margin:0}
.figures{display:flex;gap:2rem;flex-wrap:wrap}`}</style>
      <script nonce={nonce} dangerouslySetInnerHTML={{ __html: SCRIPT }} />
    </head>
    <body>
      <h1>Webhook Inbox</h1>
      <p id="notice" role="status" />
      {children}
    </body>
  </html>
);

const SignIn: FC = () => (
  <main>
    <form id="sign-in">
      <label>
        Admin token <input name="token" type="password" autocomplete="off" required />
      </label>
      <button type="submit">Sign in</button>
    </form>
  </main>
);

function age(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

const ActionForm: FC<{ action: string; target: string; label: string }> = ({ action, target, label }) => (
  <form data-action={action} data-target={target}>
    <input name="operator" placeholder="operator" aria-label={`operator for ${target}`} required />
    <button type="submit">{label}</button>
  </form>
);

const EventTable: FC<{ title: string; events: EventListing[] }> = ({ title, events }) => (
  <section>
    <h2>
      {title} ({events.length})
    </h2>
    {events.length === 0 ? (
      <p>none</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>provider</th>
            <th>event</th>
            <th>type</th>
            <th>status</th>
            <th>attempts</th>
            <th>received</th>
            <th>last error</th>
            <th>replay</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => {
            const target = `${event.provider}/${event.eventId}`;
            return (
              <tr data-event={target}>
                <td>{event.provider}</td>
                <td>{event.eventId}</td>
                <td>{event.eventType}</td>
                <td class="status">{event.status}</td>
                <td>{event.attempts}</td>
                <td>{event.receivedAt.toISOString()}</td>
                <td class="error">{event.lastError ?? ''}</td>
                <td>
                  <ActionForm
                    action={`/admin/api/events/${encodeURIComponent(event.provider)}/${encodeURIComponent(event.eventId)}/replay`}
                    target={target}
                    label="Replay"
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    )}
  </section>
);

const OutboxTable: FC<{ messages: OutboxListing[] }> = ({ messages }) => (
  <section>
    <h2>Dead outbox messages ({messages.length})</h2>
    {messages.length === 0 ? (
      <p>none</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>id</th>
            <th>topic</th>
            <th>attempts</th>
            <th>last error</th>
            <th>retry</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((message) => (
            <tr data-message={message.id}>
              <td>{message.id}</td>
              <td>{message.topic}</td>
              <td>{message.attempts}</td>
              <td class="error">{message.lastError ?? ''}</td>
              <td>
                <ActionForm action={`/admin/api/outbox/${message.id}/retry`} target={message.id} label="Retry" />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
  </section>
);

const Counts: FC<{ title: string; counts: Record<string, number> }> = ({ title, counts }) => (
  <div>
    <h3>{title}</h3>
    <table>
      <tbody>
        {Object.entries(counts).map(([status, count]) => (
          <tr>
            <th>{status}</th>
            <td>{count}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

interface DashboardData {
  counts: StatusCounts;
  failed: EventListing[];
  parked: EventListing[];
  dead: EventListing[];
  deadMessages: OutboxListing[];
}

const Dashboard: FC<DashboardData> = ({ counts, failed, parked, dead, deadMessages }) => (
  <main>
    <section>
      <h2>Backlog</h2>
      <p>
        Oldest event still to apply: <strong id="oldest-event">{age(counts.oldestUnprocessedSeconds)}</strong>; oldest
        pending outbox message: <strong id="oldest-outbox">{age(counts.oldestPendingOutboxSeconds)}</strong>
      </p>
      <div class="figures">
        <Counts title="Events by status" counts={counts.events} />
        <Counts title="Outbox by status" counts={counts.outbox} />
      </div>
    </section>
    <EventTable title="Recent failures" events={failed} />
    <EventTable title="Parked" events={parked} />
    <EventTable title="Dead letters" events={dead} />
    <OutboxTable messages={deadMessages} />
  </main>
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
 * The sign-in page, answered with 401 to a GET /admin that carries no Authorization header (a
 * browser's navigation). Registered before the bearer gate; any request with a header meets the gate.
 */
export function dashboardSignIn(): (c: Context, next: () => Promise<void>) => Promise<Response | undefined> {
  return async (c, next) => {
    if (c.req.method === 'GET' && c.req.path === '/admin' && c.req.header('authorization') === undefined) {
      const nonce = newNonce();
      secured(c, nonce);
      return c.html(
        <Layout nonce={nonce}>
          <SignIn />
        </Layout>,
        401,
      );
    }
    await next();
    return undefined;
  };
}

export function dashboardRoutes(): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  routes.get('/', async (c) => {
    const { db } = c.var;
    const list = (status: 'failed' | 'parked' | 'dead_letter') => listEvents(db, { status, limit: ROWS_PER_SECTION });
    const [counts, failed, parked, dead, deadMessages] = await Promise.all([
      statusCounts(db),
      list('failed'),
      list('parked'),
      list('dead_letter'),
      listOutbox(db, { status: 'dead', limit: ROWS_PER_SECTION }),
    ]);
    const nonce = newNonce();
    secured(c, nonce);
    return c.html(
      <Layout nonce={nonce}>
        <Dashboard counts={counts} failed={failed} parked={parked} dead={dead} deadMessages={deadMessages} />
      </Layout>,
    );
  });
  return routes;
}
