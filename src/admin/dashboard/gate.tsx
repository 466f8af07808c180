// How the dashboard lets a browser in, and what every dashboard answer is sent with.
//
// Authentication without anything a browser sends by itself (no cookie, no Basic auth), so another
// site cannot make the operator's browser act (CSRF): every /admin request needs
// `Authorization: Bearer ADMIN_TOKEN`, like the API. A plain navigation carries no such header, so
// any GET of a dashboard page without one gets a 401 whose body is the sign-in page; its one script
// (script.ts) keeps the token in sessionStorage (this tab only, gone when it closes) and fetches
// pages and posts actions with the header. A cross-site page can neither read the token nor attach
// the header (a custom header needs a CORS preflight, which is never granted).
//
// Every answer, the sign-in page included, gets a fresh nonce and a Content-Security-Policy that
// runs only the script carrying it; `securedPage` is the one place that pairs the two.
import type { Context } from 'hono';
import type { Child, FC } from 'hono/jsx';
import { ADMIN_API_BASE } from '../api/api.ts';
import { Layout, type PageFrame } from './layout.tsx';

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

/** A dashboard page in its frame, with the security headers and the nonce its script needs. */
export function securedPage(c: Context, frame: PageFrame, body: Child, status: 200 | 400 | 401 | 404 = 200) {
  const nonce = newNonce();
  secured(c, nonce);
  return c.html(
    <Layout nonce={nonce} {...frame}>
      {body}
    </Layout>,
    status,
  );
}

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
      return securedPage(c, { title: 'Sign in' }, <SignIn />, 401);
    }
    await next();
    return undefined;
  };
}
