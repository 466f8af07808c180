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
  MAX_BODY_BYTES: integer(262144, 1),
  WEBHOOK_TOLERANCE_SECONDS: integer(300, 0),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  ACME_WEBHOOK_SECRET: secretList,
});

export type Config = z.infer<typeof envSchema>;

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
  const parsed = envSchema.safeParse(present);
  if (parsed.success) return parsed.data;
  // Name the variable, never echo its value: it may be a secret or a connection string.
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  throw new ConfigError(problems);
}

export function providerSecrets(config: Config): ProviderSecrets {
  return { acme: config.ACME_WEBHOOK_SECRET };
}
