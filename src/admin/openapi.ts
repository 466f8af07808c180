// The admin API described as an OpenAPI 3.1 document, written here as a typed constant (no
// generator library: @hono/zod-openapi would replace the routes' Hono with its own wrapper). Request
// schemas come from the very zod schemas the routes validate with (z.toJSONSchema); a test checks
// that every path and method here is a route and every route is here.
import { z } from 'zod';
import { webhookEventStatuses } from '../db/schema.ts';
import { eventParams, eventQuery, eventsQuery, messageParams, operatorBody, outboxQuery } from './schemas.ts';

type JsonSchema = Record<string, unknown>;

interface Parameter {
  name: string;
  in: 'query' | 'path';
  required: boolean;
  schema: JsonSchema;
  description?: string;
}

interface Operation {
  summary: string;
  parameters?: Parameter[];
  requestBody?: { required: true; content: { 'application/json': { schema: JsonSchema } } };
  responses: Record<string, { description: string; content?: { 'application/json': { schema: JsonSchema } } }>;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  components: { securitySchemes: Record<string, JsonSchema>; schemas: Record<string, JsonSchema> };
  security: Array<Record<string, string[]>>;
  paths: Record<string, Partial<Record<'get' | 'post', Operation>>>;
}

const jsonSchema = (schema: z.ZodType): JsonSchema => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' });
  return rest;
};

/** One parameter per field of an object schema (path fields are always required). */
function parameters(where: 'query' | 'path', schema: z.ZodObject): Parameter[] {
  const described = jsonSchema(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(described.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (described.required ?? []).includes(name),
    schema: property,
  }));
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ref('Error')) });
const operatorRequest = { required: true as const, content: json(jsonSchema(operatorBody)) };
const guarded = { '401': error('missing or wrong bearer token'), '400': error('invalid input') };

const nullableString = { type: ['string', 'null'] };
const timestamp = { type: 'string', format: 'date-time' };
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' };

function buildDocument(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Webhook Inbox admin API',
      version: '1',
      description: 'Operator access to the inbox and the outbox. Replays and retries are recorded in operator_actions.',
    },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' } },
      schemas: {
        Error: { type: 'object', required: ['error'], properties: { error: { type: 'string' } } },
        Event: {
          type: 'object',
          required: ['provider', 'event_id', 'event_type', 'status', 'attempts', 'last_error', 'received_at'],
          properties: {
            provider: { type: 'string' },
            event_id: { type: 'string' },
            event_type: { type: 'string' },
            status: { enum: [...webhookEventStatuses] },
            attempts: { type: 'integer' },
            last_error: nullableString,
            received_at: timestamp,
            completed_at: nullableTimestamp,
            available_at: timestamp,
            occurred_at: nullableTimestamp,
            locked_until: nullableTimestamp,
            payload: { description: 'only with ?payload=true; null once purged' },
          },
        },
        OutboxMessage: {
          type: 'object',
          required: ['id', 'topic', 'deduplication_key', 'status', 'attempts', 'last_error'],
          properties: {
            id: { type: 'string', format: 'uuid' },
            topic: { type: 'string' },
            deduplication_key: { type: 'string' },
            status: { enum: ['pending', 'published', 'dead'] },
            attempts: { type: 'integer' },
            last_error: nullableString,
            created_at: timestamp,
            available_at: timestamp,
            published_at: nullableTimestamp,
            locked_until: nullableTimestamp,
          },
        },
      },
    },
    paths: {
      '/admin/api/events': {
        get: {
          summary: 'List events, newest first (no payloads)',
          parameters: parameters('query', eventsQuery),
          responses: {
            '200': {
              description: 'events',
              content: json({ type: 'object', properties: { events: { type: 'array', items: ref('Event') } } }),
            },
            ...guarded,
          },
        },
      },
      '/admin/api/events/{provider}/{eventId}': {
        get: {
          summary: 'One event: state, attempts, last error, timestamps',
          parameters: [...parameters('path', eventParams), ...parameters('query', eventQuery)],
          responses: {
            '200': { description: 'the event', content: json({ type: 'object', properties: { event: ref('Event') } }) },
            '404': error('unknown event'),
            ...guarded,
          },
        },
      },
      '/admin/api/events/{provider}/{eventId}/replay': {
        post: {
          summary: 'Replay one event through the domain path (completed or ignored: recorded, nothing applied)',
          parameters: parameters('path', eventParams),
          requestBody: operatorRequest,
          responses: {
            '200': {
              description: 'the state after the replay',
              content: json({
                type: 'object',
                properties: {
                  before: { enum: [...webhookEventStatuses] },
                  applied: { type: 'boolean' },
                  event: ref('Event'),
                },
              }),
            },
            '404': error('unknown event'),
            ...guarded,
          },
        },
      },
      '/admin/api/outbox': {
        get: {
          summary: 'List outbox messages, newest first (no payloads)',
          parameters: parameters('query', outboxQuery),
          responses: {
            '200': {
              description: 'messages',
              content: json({
                type: 'object',
                properties: { messages: { type: 'array', items: ref('OutboxMessage') } },
              }),
            },
            ...guarded,
          },
        },
      },
      '/admin/api/outbox/{id}/retry': {
        post: {
          summary: 'Send a dead message back to pending (attempts 0, due now); any other status is left alone',
          parameters: parameters('path', messageParams),
          requestBody: operatorRequest,
          responses: {
            '200': {
              description: 'the state after',
              content: json({
                type: 'object',
                properties: { retried: { type: 'boolean' }, message: ref('OutboxMessage') },
              }),
            },
            '404': error('unknown message'),
            ...guarded,
          },
        },
      },
      '/admin/api/stats': {
        get: {
          summary: 'Counts by status for events and outbox, and the oldest backlog ages',
          responses: {
            '200': {
              description: 'counts',
              content: json({
                type: 'object',
                properties: {
                  events: { type: 'object', additionalProperties: { type: 'integer' } },
                  outbox: { type: 'object', additionalProperties: { type: 'integer' } },
                  oldest_unprocessed_seconds: { type: 'number' },
                  oldest_pending_outbox_seconds: { type: 'number' },
                },
              }),
            },
            '401': guarded['401'],
          },
        },
      },
      '/admin/api/openapi.json': {
        get: {
          summary: 'This document',
          responses: {
            '200': { description: 'OpenAPI 3.1', content: json({ type: 'object' }) },
            '401': guarded['401'],
          },
        },
      },
    },
  };
}

let built: OpenApiDocument | undefined;

/** Built on first use: nothing runs at import time (Workers start-up stays cheap). */
export function adminOpenApi(): OpenApiDocument {
  built ??= buildDocument();
  return built;
}
