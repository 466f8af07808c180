// Pieces every admin API route declaration uses (api.ts, senders-api.ts, jobs-api.ts, rejections-api.ts): a JSON answer
// with its schema, and the refusals (400 naming the field, 401, 404) the document lists.
import type { z } from '@hono/zod-openapi';
import { errorSchema } from './schemas.ts';

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
