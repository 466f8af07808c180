// The frame around every dashboard page: <head> with the stylesheet and the one script (carrying the
// response's CSP nonce), the section links, the session controls (as of, Refresh, every 30 s,
// Operator, Sign out) and the <main> a page renders into. The sign-in page gets the frame without
// the navigation and session controls: it has no time it was read.
import type { Child, FC } from 'hono/jsx';
import { OPERATOR_NAME_MAX } from '../../lib/operator-name.ts';
import { DASHBOARD_SCRIPT } from './script.ts';
import { DASHBOARD_STYLE } from './style.ts';

const SECTIONS = [
  ['/admin', 'Overview'],
  ['/admin/events', 'Events'],
  ['/admin/outbox', 'Outbox'],
  ['/admin/senders', 'Senders'],
  ['/admin/destinations', 'Destinations'],
  ['/admin/jobs', 'Jobs'],
  ['/admin/rejections', 'Refused'],
] as const;

/** "2026-12-01 " and "19:43:51": a phone shows the time only (the date is today's, as a rule). */
const stamp = (ms: number) => {
  const iso = new Date(ms).toISOString();
  return { date: `${iso.slice(0, 10)} `, time: iso.slice(11, 19) };
};

/** What a page tells its frame: its title, when it was read (absent on the sign-in page), its section. */
export interface PageFrame {
  title: string;
  asOfMs?: number;
  current?: string;
}

export const Layout: FC<PageFrame & { nonce: string; children: Child }> = ({
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
      <style>{DASHBOARD_STYLE}</style>
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
                {SECTIONS.map(([href, label]) => (
                  <a href={href} aria-current={current === href ? 'page' : undefined}>
                    {label}
                  </a>
                ))}
              </nav>
              <div class="session">
                <span class="as-of">
                  As of{' '}
                  <time datetime={new Date(asOfMs).toISOString()}>
                    <span class="date">{stamp(asOfMs).date}</span>
                    {stamp(asOfMs).time} UTC
                  </time>
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
