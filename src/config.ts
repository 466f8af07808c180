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
  // The scheme chooses the publisher; each one's form is checked when the publisher is built (src/outbox/target.ts).
  OUTBOX_TARGET_URL: z.url({ protocol: /^(https?|nats|amqps?|rediss?)$/ }).optional(),
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
});

/** One sender's configuration: `<NAME>_WEBHOOK_SECRET`, `_PUBLIC_KEY` and `_URL`. */
export interface ProviderSettings {
  secrets: readonly string[];
  publicKeys: readonly string[];
  url?: string;
}

export type Config = z.infer<typeof envSchema> & {
  /** By provider name, every sender with at least one variable set. */
  providers: Readonly<Record<string, ProviderSettings>>;
};

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

/** A signed public URL: what the sender is configured to post to, exactly. */
const publicUrl = z.url({ protocol: /^https?$/ });

/** What a sender variable holds: HMAC secrets or shared tokens, public keys, or the signed URL. */
export type ProviderVariableKind = 'SECRET' | 'PUBLIC_KEY' | 'URL';

/** Slack's secret keeps the name Slack's own documentation gives it. */
const VARIABLE_EXCEPTIONS: Readonly<Record<string, string>> = { slack_SECRET: 'SLACK_SIGNING_SECRET' };

/** The contract's naming rule: `<NAME>_WEBHOOK_SECRET`, `_PUBLIC_KEY`, `_URL` (Slack's secret aside). */
export function providerVariable(provider: string, kind: ProviderVariableKind): string {
  return VARIABLE_EXCEPTIONS[`${provider}_${kind}`] ?? `${provider.toUpperCase()}_WEBHOOK_${kind}`;
}

const PROVIDER_VARIABLE = /^([A-Z0-9]+)_WEBHOOK_(SECRET|PUBLIC_KEY|URL)$/;

/** The sender and kind a variable configures by the naming rule, if it is one. */
function providerVariableOf(variable: string): { provider: string; kind: ProviderVariableKind } | undefined {
  if (variable === 'SLACK_SIGNING_SECRET') return { provider: 'slack', kind: 'SECRET' };
  const match = PROVIDER_VARIABLE.exec(variable);
  const provider = match?.[1]?.toLowerCase();
  const kind = match?.[2] as ProviderVariableKind | undefined;
  // A name the rule gives to another variable (`SLACK_WEBHOOK_SECRET`) configures nothing.
  if (provider === undefined || kind === undefined || providerVariable(provider, kind) !== variable) return undefined;
  return { provider, kind };
}

/**
 * Every sender variable set, by the naming rule: this module knows no sender's name, so that every
 * layer may read it; the provider registry decides which names are senders. Problems join the
 * others, named by variable.
 */
function parseProviderSettings(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): Record<string, ProviderSettings> {
  const settings: Record<string, ProviderSettings> = {};
  for (const [variable, value] of Object.entries(env)) {
    const target = providerVariableOf(variable);
    if (target === undefined) continue;
    const current = settings[target.provider] ?? { secrets: [], publicKeys: [] };
    const parsed = (target.kind === 'URL' ? publicUrl : secretList).safeParse(value);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((issue) => `${variable}: ${issue.message}`));
      continue;
    }
    const data = parsed.data;
    if (typeof data === 'string') settings[target.provider] = { ...current, url: data };
    else if (target.kind === 'SECRET') settings[target.provider] = { ...current, secrets: data };
    else settings[target.provider] = { ...current, publicKeys: data };
  }
  return settings;
}

export function parseConfig(env: Readonly<Record<string, string | undefined>>): Config {
  // An empty variable means "not set", as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = checkedEnvSchema.safeParse(present);
  // Name the variable, never echo its value: it may be a secret or a connection string.
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  const settings = parseProviderSettings(present, problems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return { ...parsed.data, providers: settings };
}

/** Each provider's secrets by its `provider` column name (the contract's provider table). */
export function providerSecrets(config: Pick<Config, 'providers'>): ProviderSecrets {
  return Object.fromEntries(Object.entries(config.providers).map(([name, settings]) => [name, settings.secrets]));
}

/** Public keys and signed URLs by provider name, as enableProviders takes them beside the secrets. */
export function providerExtras(config: Pick<Config, 'providers'>): {
  publicKeys: ProviderSecrets;
  urls: Readonly<Record<string, string>>;
} {
  const entries = Object.entries(config.providers);
  return {
    publicKeys: Object.fromEntries(entries.map(([name, settings]) => [name, settings.publicKeys])),
    urls: Object.fromEntries(
      entries.flatMap(([name, settings]) => (settings.url === undefined ? [] : [[name, settings.url]])),
    ),
  };
}

/** Whether any sender is enabled: a secret or a public key set for at least one. */
export function anyProviderConfigured(config: Pick<Config, 'providers'>): boolean {
  return Object.values(config.providers).some((settings) => settings.secrets.length + settings.publicKeys.length > 0);
}
