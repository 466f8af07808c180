// Bearer-token gates for operator surfaces, on Hono's bearerAuth (constant-time comparison of
// digests). Every refusal is a JSON 401, whether the header is missing, malformed or wrong.
import type { MiddlewareHandler } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';

const unauthorized = () =>
  new Response('{"error":"unauthorized"}', { status: 401, headers: { 'content-type': 'application/json' } });

export function requireBearer(token: string): MiddlewareHandler {
  return bearerAuth({
    token,
    noAuthenticationHeader: { message: unauthorized },
    invalidAuthenticationHeader: { message: unauthorized },
    invalidToken: { message: unauthorized },
  });
}
