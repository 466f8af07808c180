// Configuration: the environment parsed once by zod at an entry point. Every bad variable is named
// in one error; nothing else in the service reads the environment.
import { z } from 'zod';

const integer = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);

/** Space-separated secrets: several are accepted at once while a secret is rotated. */
const secretList = z
  .string()
  .optional()
  .transform((value) => (value ?? '').split(/\s+/).filter((secret) => secret.length > 0));

const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// or postgresql:// URL' })
    .optional(),
  PORT: integer(3000, 0).pipe(z.number().max(65535)),
  DATA_DIR: z.string().min(1).default('.data'),
  DB_POOL_MAX: integer(10, 1),
  PROCESSING_MODE: z.enum(['sync', 'async']).default('sync'),
  HANDLER_DEADLINE_MS: integer(5000, 1),
  INTAKE_BATCH_MAX: integer(64, 1),
  MAX_BODY_BYTES: integer(262144, 1),
  HTTP_HEADERS_TIMEOUT_MS: integer(10_000, 1),
  HTTP_REQUEST_TIMEOUT_MS: integer(30_000, 1),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: integer(5_000, 1),
  HTTP_MAX_CONNECTIONS: integer(1024, 1),
  WEBHOOK_TOLERANCE_SECONDS: integer(300, 0),
  INBOX_MAX_BACKLOG: integer(10000, 1),
  INBOX_MAX_ATTEMPTS: integer(10, 1),
  INBOX_LEASE_MS: integer(30000, 1),
  INBOX_BACKOFF_BASE_MS: integer(1000, 1),
  INBOX_BACKOFF_MAX_MS: integer(300000, 1),
  WORKER_INTERVAL_MS: integer(1000, 0),
  OUTBOX_TARGET_URL: z.url({ protocol: /^https?$/ }).optional(),
  OUTBOX_MAX_ATTEMPTS: integer(10, 1),
  OUTBOX_BACKOFF_BASE_MS: integer(1000, 1),
  OUTBOX_BACKOFF_MAX_MS: integer(3600000, 1),
  OUTBOX_LEASE_MS: integer(30000, 1),
  OUTBOX_TIMEOUT_MS: integer(10000, 1),
  RELAY_INTERVAL_MS: integer(1000, 0),
  PAYLOAD_RETENTION_DAYS: integer(7, 0),
  EVENT_RETENTION_DAYS: integer(30, 0),
  ADMIN_TOKEN: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  METRICS_TOKEN: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  ACME_WEBHOOK_SECRET: secretList,
  STANDARD_WEBHOOK_SECRET: secretList,
  STRIPE_WEBHOOK_SECRET: secretList,
  GITHUB_WEBHOOK_SECRET: secretList,
  SHOPIFY_WEBHOOK_SECRET: secretList,
  SLACK_SIGNING_SECRET: secretList,
});

export type Config = z.infer<typeof envSchema>;

/**
 * Rules across variables. The relay starts a publish only while its lease outlasts the call's
 * timeout: a timeout at or over the lease would mean no message is ever sent.
 */
const checkedEnvSchema = envSchema
  .refine((env) => env.OUTBOX_TIMEOUT_MS < env.OUTBOX_LEASE_MS, {
    path: ['OUTBOX_TIMEOUT_MS'],
    message: 'must be below OUTBOX_LEASE_MS',
  })
  // The request timeout bounds the headers too: a shorter one would cut requests whose headers are on time.
  .refine((env) => env.HTTP_HEADERS_TIMEOUT_MS <= env.HTTP_REQUEST_TIMEOUT_MS, {
    path: ['HTTP_HEADERS_TIMEOUT_MS'],
    message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS',
  });

/** Secrets by provider name, as the provider registry reads them. */
export type ProviderSecrets = Readonly<Record<string, readonly string[]>>;

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export function parseConfig(env: Readonly<Record<string, string | undefined>>): Config {
  // An empty variable means "not set", as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = checkedEnvSchema.safeParse(present);
  if (parsed.success) return parsed.data;
  // Name the variable, never echo its value: it may be a secret or a connection string.
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  throw new ConfigError(problems);
}

/** Each provider's secret variable, by the `provider` column's name (the contract's provider table). */
export const PROVIDER_SECRET_VARIABLES = {
  acme: 'ACME_WEBHOOK_SECRET',
  standard: 'STANDARD_WEBHOOK_SECRET',
  stripe: 'STRIPE_WEBHOOK_SECRET',
  github: 'GITHUB_WEBHOOK_SECRET',
  shopify: 'SHOPIFY_WEBHOOK_SECRET',
  slack: 'SLACK_SIGNING_SECRET',
} as const satisfies Record<string, keyof Config>;

/** Secrets by provider name, as the provider registry reads them. */
export function providerSecrets(config: Config): ProviderSecrets {
  return Object.fromEntries(
    Object.entries(PROVIDER_SECRET_VARIABLES).map(([provider, variable]) => [provider, config[variable]]),
  );
}
