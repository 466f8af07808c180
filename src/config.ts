// Configuration: the environment parsed once by zod at an entry point. Every bad variable is named
// in one error; nothing else in the service reads the environment. Secrets and tokens may also come
// from files (`<VARIABLE>_FILE`, as container platforms mount secrets), read through the entry's
// reader so that the Worker, which has no files, imports nothing of the file system. Sender
// variables are named by src/sender-variables.ts, and operator names (a named admin token carries
// one) by src/lib/operator-name.ts: the two modules of src/ this one reads.
import { z } from 'zod';
import { OPERATOR_NAME_MAX, operatorNameProblem } from './lib/operator-name.ts';
import {
  isPublicKeyListVariable,
  isSecretListVariable,
  type SenderSettings,
  type SettingsBySender,
  senderVariableOf,
} from './sender-variables.ts';

const integer = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);

/**
 * Secrets, several at once while a secret is rotated: space-separated in a variable, or one per line
 * in its `_FILE` (each line whole, spaces kept), which arrives here as the list of lines.
 */
const secretList = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) =>
    Array.isArray(value) ? value : (value ?? '').split(/\s+/).filter((secret) => secret.length > 0),
  );

/**
 * RFC 6750's bearer token syntax (b64token), the only tokens an `Authorization: Bearer` header can
 * carry: any other character would lock every request out.
 */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const BEARER_TOKEN_MIN = 16;
const BEARER_SYNTAX = 'must use only letters, digits and -._~+/ (then any trailing =), as RFC 6750 says';

const bearerToken = z
  .string()
  .min(BEARER_TOKEN_MIN, { message: `must be at least ${BEARER_TOKEN_MIN} characters` })
  .regex(BEARER_TOKEN, { message: BEARER_SYNTAX })
  .optional();

/** One named admin token (ADMIN_TOKENS): what is done with it is recorded under `operator`. */
export interface NamedToken {
  operator: string;
  token: string;
}

/**
 * A `name:token` entry of ADMIN_TOKENS, split at its last colon (a bearer token holds none, so a
 * name may); undefined when there is no colon.
 */
function splitNamedToken(entry: string): NamedToken | undefined {
  const at = entry.lastIndexOf(':');
  return at < 0 ? undefined : { operator: entry.slice(0, at).trim(), token: entry.slice(at + 1) };
}

/** Why an ADMIN_TOKENS entry is refused, by rule and never by its content (it holds a token). */
function namedTokenProblem(pair: NamedToken | undefined): string | undefined {
  if (pair === undefined) return 'each entry must be name:token';
  // The operator names a token may carry are those operator_actions accepts from a client.
  if (operatorNameProblem(pair.operator) !== undefined) {
    return `each name must be 1 to ${OPERATOR_NAME_MAX} characters, no control characters`;
  }
  if (pair.token.length < BEARER_TOKEN_MIN) return `each token must be at least ${BEARER_TOKEN_MIN} characters`;
  return BEARER_TOKEN.test(pair.token) ? undefined : `each token ${BEARER_SYNTAX}`;
}

/**
 * ADMIN_TOKENS: `name:token` pairs, space-separated in the variable, one a line in its file (where a
 * name may hold spaces). A name may have several tokens (rotation by overlap); a token belongs to one
 * name.
 */
const namedTokens = secretList.transform((entries, context): readonly NamedToken[] | undefined => {
  const named: NamedToken[] = [];
  for (const entry of entries) {
    const pair = splitNamedToken(entry);
    const problem = namedTokenProblem(pair);
    if (pair === undefined || problem !== undefined) {
      context.addIssue({ code: 'custom', message: problem ?? 'unreachable' });
      return z.NEVER;
    }
    named.push(pair);
  }
  if (new Set(named.map((pair) => pair.token)).size !== named.length) {
    context.addIssue({ code: 'custom', message: 'a token may belong to one name only, and be given once' });
    return z.NEVER;
  }
  return named.length === 0 ? undefined : named;
});

/**
 * Whether postgres.js can read `url`: it parses the URL with the first host of a multi-host list
 * (`host1:5432,host2:5432`), and a port beyond 65535 or not a number would otherwise surface at
 * connection time as a bare `TypeError: Invalid URL`.
 */
function isConnectionUrl(url: string): boolean {
  const rest = url.slice(url.indexOf('://') + 3);
  const authority = rest.split(/[?/]/)[0] ?? '';
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  try {
    new URL(url.replace(hosts, hosts.split(',')[0] ?? ''));
    return true;
  } catch {
    return false;
  }
}

const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// or postgresql:// URL' })
    .refine(isConnectionUrl, { message: 'is not a valid URL (check its host and its port: 1 to 65535)' })
    .optional(),
  // Only read in production, where the embedded server takes this opt-in (see checkEmbeddedDatabase).
  EMBEDDED_DATABASE: z.enum(['allow'], { message: 'must be `allow` (or unset)' }).optional(),
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
  // The delivery log (src/inbox/delivery-log.ts): `npm start` writes it this often; 0 turns it off everywhere.
  DELIVERY_LOG_FLUSH_MS: integer(250, 0),
  // The scheme chooses the publisher; each one's form is checked when the publisher is built (src/outbox/target.ts).
  OUTBOX_TARGET_URL: z.url({ protocol: /^(https?|nats|amqps?|rediss?)$/ }).optional(),
  /** JSON: the named destinations (src/outbox/destinations.ts parses it at the entry, docs/outbox.md). */
  OUTBOX_DESTINATIONS: z.string().optional(),
  OUTBOX_MAX_ATTEMPTS: integer(10, 1),
  OUTBOX_BACKOFF_BASE_MS: integer(1000, 1),
  OUTBOX_BACKOFF_MAX_MS: integer(3600000, 1),
  OUTBOX_LEASE_MS: integer(30000, 1),
  OUTBOX_TIMEOUT_MS: integer(10000, 1),
  RELAY_INTERVAL_MS: integer(1000, 0),
  PAYLOAD_RETENTION_DAYS: integer(7, 0),
  EVENT_RETENTION_DAYS: integer(30, 0),
  ADMIN_TOKEN: bearerToken,
  ADMIN_TOKENS: namedTokens,
  METRICS_TOKEN: bearerToken,
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
});

export type Config = z.infer<typeof envSchema> & {
  /** By sender name, every sender with at least one variable set, whether the registry knows the name or not. */
  senderSettings: SettingsBySender;
};

type Env = z.infer<typeof envSchema>;

/**
 * The lease outlasts the call: a leased drainer starts a call (a publish, an application) only while
 * the lease it took still covers the call's timeout, so a timeout at or over the lease would mean
 * nothing is ever done. One rule for each drainer, refused at start-up, never adjusted behind the
 * operator's back: the relay's publish timeout, and in async mode the worker's application, which
 * the connections' statement timeout (HANDLER_DEADLINE_MS) bounds. In sync mode no worker leases
 * events, and a long request deadline is the operator's to choose.
 */
export const LEASED_CALLS: readonly {
  call: 'OUTBOX_TIMEOUT_MS' | 'HANDLER_DEADLINE_MS';
  lease: 'OUTBOX_LEASE_MS' | 'INBOX_LEASE_MS';
  /** The processing mode in which the drainer runs, when not in every mode. */
  mode?: Env['PROCESSING_MODE'];
}[] = [
  { call: 'OUTBOX_TIMEOUT_MS', lease: 'OUTBOX_LEASE_MS' },
  { call: 'HANDLER_DEADLINE_MS', lease: 'INBOX_LEASE_MS', mode: 'async' },
];

/** One problem per leased call whose timeout its lease does not outlast (LEASED_CALLS). */
export function leaseProblems(env: Pick<Env, (typeof LEASED_CALLS)[number]['call' | 'lease'] | 'PROCESSING_MODE'>) {
  return LEASED_CALLS.filter(
    ({ call, lease, mode }) => (mode === undefined || mode === env.PROCESSING_MODE) && env[call] >= env[lease],
  ).map(({ call, lease, mode }) => ({
    path: [call],
    message: `must be below ${lease}${mode === undefined ? '' : ` in ${mode} mode`}`,
  }));
}

/** Rules across variables. */
const checkedEnvSchema = envSchema
  .superRefine((env, context) => {
    for (const problem of leaseProblems(env)) context.addIssue({ code: 'custom', ...problem });
  })
  // The request timeout bounds the headers too: a shorter one would cut requests whose headers are on time.
  .refine((env) => env.HTTP_HEADERS_TIMEOUT_MS <= env.HTTP_REQUEST_TIMEOUT_MS, {
    path: ['HTTP_HEADERS_TIMEOUT_MS'],
    message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS',
  })
  // A named token is matched first, so the shared token given to one name would record everything
  // done with it under that person's name. Compared once at start-up, not per request: no timing oracle.
  .refine((env) => !env.ADMIN_TOKENS?.some((named) => named.token === env.ADMIN_TOKEN), {
    path: ['ADMIN_TOKEN'],
    message:
      "must differ from every token of ADMIN_TOKENS (else actions taken with it are recorded under that token's name)",
  });

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/** Something worth an operator's attention that does not stop start-up; names a variable, never a value. */
export interface ConfigWarning {
  variable: string;
  message: string;
}

export interface ConfigSources {
  /** Reads a `_FILE` variable's file as UTF-8; absent where there are no files (the Worker). */
  readFile?: (path: string) => string;
  /** Told of every warning; the entry logs them once its logger exists. */
  warn?: (warning: ConfigWarning) => void;
}

/** Variables that hold one token, besides the sender lists: those a `_FILE` may replace too. */
const TOKEN_VARIABLES: ReadonlySet<string> = new Set(['ADMIN_TOKEN', 'METRICS_TOKEN']);
/** Documents whose `_FILE` is taken whole (JSON over several lines), not a line at a time. */
const DOCUMENT_VARIABLES: ReadonlySet<string> = new Set(['OUTBOX_DESTINATIONS']);
/** Lists of `name:token` pairs: a `_FILE` holds one a line. */
const NAMED_TOKEN_VARIABLE = 'ADMIN_TOKENS';

/** Shorter secrets are guessable offline from one captured signature; warned about, not refused. */
export const SHORT_SECRET_BYTES = 16;

type Resolved = Record<string, string | readonly string[]>;

/**
 * The environment with every `<VARIABLE>_FILE` replaced by its file's content: for a list, its lines
 * that hold more than whitespace, each taken whole (a trailing CR dropped); for a token, its one line.
 * A leading byte order mark (Windows editors write one) is no part of the first secret.
 */
function resolveFiles(present: Readonly<Record<string, string>>, sources: ConfigSources, problems: string[]): Resolved {
  const resolved: Resolved = { ...present };
  for (const [fileVariable, path] of Object.entries(present)) {
    const variable = fileVariable.slice(0, -'_FILE'.length);
    const list =
      isSecretListVariable(variable) || isPublicKeyListVariable(variable) || variable === NAMED_TOKEN_VARIABLE;
    const document = DOCUMENT_VARIABLES.has(variable);
    if (!fileVariable.endsWith('_FILE') || (!list && !document && !TOKEN_VARIABLES.has(variable))) continue;
    delete resolved[fileVariable];
    if (present[variable] !== undefined) {
      problems.push(`${fileVariable}: ${variable} is set too; keep one of them`);
      continue;
    }
    if (sources.readFile === undefined) {
      problems.push(`${fileVariable}: files cannot be read here; set ${variable} itself`);
      continue;
    }
    let content: string;
    try {
      content = sources.readFile(path);
    } catch (error) {
      // The path is the operator's own and no secret; the error's code says why (ENOENT, EACCES).
      const code = (error as { code?: unknown }).code;
      problems.push(`${fileVariable}: cannot read ${path}${typeof code === 'string' ? ` (${code})` : ''}`);
      continue;
    }
    if (document) {
      resolved[variable] = content.replace(/^\uFEFF/, '');
      continue;
    }
    const lines = content
      .replace(/^\uFEFF/, '')
      .split('\n')
      .map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line))
      // A line of spaces is a blank line an editor left, not a secret anyone chose.
      .filter((line) => line.trim().length > 0);
    if (lines.length === 0) {
      const kind = isPublicKeyListVariable(variable) ? 'key' : 'secret';
      problems.push(`${fileVariable}: the file holds no ${kind}`);
    } else if (!list && lines.length > 1) problems.push(`${fileVariable}: holds ${lines.length} lines, not one token`);
    else resolved[variable] = list ? lines : (lines[0] as string);
  }
  return resolved;
}

/**
 * A secret or token is low-entropy when it uses fewer distinct characters than this, a `whsec_`
 * prefix aside (`aaaa…`, `abababab…`, `whsec_AAAA…` whose key is all zero bytes). Deliberately
 * simple: 16 random hex characters fall below it about once in ten million tries.
 */
export const LOW_ENTROPY_DISTINCT = 5;

function lowEntropy(value: string): boolean {
  const key = value.startsWith('whsec_') ? value.slice('whsec_'.length) : value;
  return new Set(key).size < LOW_ENTROPY_DISTINCT;
}

/** Every secret and token as configured, by variable: what the strength checks read. */
function secretsByVariable(resolved: Resolved): Array<[string, readonly string[]]> {
  return Object.entries(resolved).flatMap(([variable, value]): Array<[string, readonly string[]]> => {
    if (isSecretListVariable(variable)) return [[variable, secretList.parse(value)]];
    if (TOKEN_VARIABLES.has(variable) && typeof value === 'string') return [[variable, [value]]];
    if (variable === NAMED_TOKEN_VARIABLE) {
      return [[variable, secretList.parse(value).flatMap((entry) => splitNamedToken(entry)?.token ?? [])]];
    }
    return [];
  });
}

/**
 * Secrets that weaken the signature promise, named by variable and never by value: one shorter than
 * SHORT_SECRET_BYTES is warned about (guessable offline from one captured signature); a low-entropy
 * one is refused in production and warned about elsewhere, where test secrets are common.
 */
function weakSecrets(resolved: Resolved, production: boolean): { warnings: ConfigWarning[]; problems: string[] } {
  const encoder = new TextEncoder();
  const warnings: ConfigWarning[] = [];
  const problems: string[] = [];
  for (const [variable, secrets] of secretsByVariable(resolved)) {
    if (secrets.some((secret) => encoder.encode(secret).byteLength < SHORT_SECRET_BYTES)) {
      warnings.push({ variable, message: `a secret shorter than ${SHORT_SECRET_BYTES} bytes is easy to guess` });
    }
    if (!secrets.some(lowEntropy)) continue;
    const message = `low entropy: fewer than ${LOW_ENTROPY_DISTINCT} distinct characters are easy to guess`;
    if (production) problems.push(`${variable}: ${message}`);
    else warnings.push({ variable, message });
  }
  return { warnings, problems };
}

/** A signed public URL: what the sender is configured to post to, exactly. */
const publicUrl = z.url({ protocol: /^https?$/ });

/**
 * Every sender variable set, by the naming rule: no sender's name is known here; the sender
 * registry decides which names are senders. Problems join the others, named by variable.
 */
function parseSenderSettings(
  env: Readonly<Record<string, string | readonly string[]>>,
  problems: string[],
): Record<string, SenderSettings> {
  const settings: Record<string, SenderSettings> = {};
  for (const [variable, value] of Object.entries(env)) {
    const target = senderVariableOf(variable);
    if (target === undefined) continue;
    const current = settings[target.sender] ?? { secrets: [], publicKeys: [] };
    const parsed = (target.kind === 'url' ? publicUrl : secretList).safeParse(value);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((issue) => `${variable}: ${issue.message}`));
      continue;
    }
    const data = parsed.data;
    if (typeof data === 'string') settings[target.sender] = { ...current, url: data };
    else if (target.kind === 'secret') settings[target.sender] = { ...current, secrets: data };
    else settings[target.sender] = { ...current, publicKeys: data };
  }
  return settings;
}

export function parseConfig(env: Readonly<Record<string, string | undefined>>, sources: ConfigSources = {}): Config {
  // An empty variable means "not set", as in most shells' `VAR= command`.
  const present = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
  const problems: string[] = [];
  const resolved = resolveFiles(present, sources, problems);
  const parsed = checkedEnvSchema.safeParse(resolved);
  // Name the variable, never echo its value: it may be a secret or a connection string.
  if (!parsed.success) {
    problems.push(...parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const senderSettings = parseSenderSettings(resolved, problems);
  const weak = weakSecrets(resolved, resolved.NODE_ENV === 'production');
  problems.push(...weak.problems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  for (const warning of weak.warnings) sources.warn?.(warning);
  return { ...parsed.data, senderSettings };
}

/**
 * Whether a Node entry may fall back to the embedded PostgreSQL when DATABASE_URL is unset. Outside
 * production it is the zero-setup default. In production a lost connection string must not quietly
 * become a data folder on the host, so it is a configuration error naming DATABASE_URL unless
 * EMBEDDED_DATABASE=allow says so, and then a warning. Not part of parseConfig: the Worker has no
 * DATABASE_URL (Hyperdrive) and may well run with NODE_ENV=production.
 */
export function checkEmbeddedDatabase(
  config: Pick<Config, 'NODE_ENV' | 'DATABASE_URL' | 'EMBEDDED_DATABASE'>,
  sources: Pick<ConfigSources, 'warn'> = {},
): void {
  if (config.DATABASE_URL !== undefined || config.NODE_ENV !== 'production') return;
  if (config.EMBEDDED_DATABASE !== 'allow') {
    throw new ConfigError([
      'DATABASE_URL: required with NODE_ENV=production (EMBEDDED_DATABASE=allow runs the embedded PostgreSQL instead)',
    ]);
  }
  sources.warn?.({
    variable: 'EMBEDDED_DATABASE',
    message: 'production on the embedded PostgreSQL, as EMBEDDED_DATABASE=allow permits: its data is in DATA_DIR',
  });
}
