// Pieces every admin API resource's routes use (<resource>/route.ts): a JSON answer with its schema,
// the refusals (400 naming the field, 401, 404) the document lists and the one 400 they throw, an
// operator's request body, an answer written with its numbers exact, and a list's counts.
import type { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { AppError } from '../../lib/errors.ts';
import { exactJsonText } from '../../lib/json-out.ts';
import type { CountsByStatus } from '../../ops/reads/counts.ts';
import { errorSchema, operatorBody } from './schemas.ts';

export const json = <Schema extends z.ZodType>(schema: Schema, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
export const unauthorized = json(errorSchema, 'missing or wrong bearer token');
export const refused = {
  400: json(errorSchema, 'a parameter or field was refused (named in `field`)'),
  401: unauthorized,
};
export const notFound = json(errorSchema, 'unknown id');

/** The one 400 of the operator surfaces: which field, never its value (it can be anything a client sent). */
export function invalidRequest(field?: string): AppError {
  return new AppError('invalid_request', field === undefined ? {} : { field });
}

/**
 * A 200 whose body may hold a stored payload: written with every number as stored (lib/json-out.ts),
 * where c.json's JSON.stringify would round an id beyond 2^53 or throw on a bigint. Typed as c.json's
 * answer would be, so the route's declared schema still checks the shape.
 */
export function exactJson<Body extends object>(c: Context, body: Body) {
  return c.body(exactJsonText(body), 200, { 'content-type': 'application/json' }) as unknown as ReturnType<
    typeof c.json<Body, 200>
  >;
}

/**
 * A list answer's `counts`, present on the first page only, with `counts_complete: false` when some
 * figure stopped at the cap (the answer stays as it always was when every figure is exact).
 */
export const withCounts = (counts: CountsByStatus | undefined) => ({
  ...(counts === undefined ? {} : { counts: counts.byStatus }),
  ...(counts === undefined || counts.atLeast.length === 0 ? {} : { counts_complete: false }),
});
export const operatorRequest = { required: true, content: { 'application/json': { schema: operatorBody } } };
