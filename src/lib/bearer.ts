// Bearer-token gates for operator surfaces, on Hono's bearerAuth (constant-time comparison of
// digests). Every refusal is a JSON 401, whether the header is missing, malformed or wrong.
import type { Context, MiddlewareHandler } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { timingSafeEqual } from 'hono/utils/buffer';

const unauthorized = () =>
  new Response('{"error":"unauthorized"}', { status: 401, headers: { 'content-type': 'application/json' } });

/** Every refusal alike, whatever was wrong. */
const refusals = {
  noAuthenticationHeader: { message: unauthorized },
  invalidAuthenticationHeader: { message: unauthorized },
  invalidToken: { message: unauthorized },
};

export function requireBearer(token: string): MiddlewareHandler {
  return bearerAuth({
    token,
    ...refusals,
  });
}

/**
 * A gate that accepts any of `tokens` and tells `accepted` which one (by index) a request carried.
 * Every token is compared, each in constant time, and the loop never stops early: how long a refusal
 * takes says nothing about which token it came close to.
 */
export function requireOneOfBearers(
  tokens: readonly string[],
  accepted: (c: Context, index: number) => void,
): MiddlewareHandler {
  return bearerAuth({
    verifyToken: async (presented, c) => {
      let found = -1;
      for (const [index, token] of tokens.entries()) {
        if ((await timingSafeEqual(token, presented)) && found < 0) found = index;
      }
      if (found >= 0) accepted(c, found);
      return found >= 0;
    },
    ...refusals,
  });
}
