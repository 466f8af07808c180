// Configuration parsing: the contract's defaults, rotation lists, errors that name variables, and which
// senders count as configured (public keys too, for the development secret and the retention check).
import { describe, expect, it } from 'vitest';
import { ConfigError, type ConfigWarning, parseConfig } from '../src/config.ts';
import { developmentSecretUse } from '../src/entry/setup/dev-secret.ts';
import { checkSenderLimits } from '../src/ops/sender-setup/sender-limits.ts';
import { senderSecrets } from '../src/sender-variables.ts';
import { configuredSenders, enabledSenderNames, redeliveryBySender, senderNames } from '../src/senders/registry.ts';
import { configProblems } from './helpers/config-problems.ts';

describe('parseConfig', () => {
  it('applies the contract defaults', () => {
    expect(parseConfig({})).toMatchObject({
      PORT: 3000,
      DATA_DIR: '.data',
      DB_POOL_MAX: 10,
      PROCESSING_MODE: 'sync',
      HANDLER_DEADLINE_MS: 5000,
      MAX_BODY_BYTES: 262144,
      WEBHOOK_TOLERANCE_SECONDS: 300,
      LOG_LEVEL: 'info',
    });
    expect(parseConfig({}).DATABASE_URL).toBeUndefined();
  });

  it('splits space-separated secrets for rotation and treats empty variables as unset', () => {
    const config = parseConfig({ ACME_WEBHOOK_SECRET: '  new-secret   old-secret ', DATABASE_URL: '', PORT: '' });
    expect(senderSecrets(config).acme).toEqual(['new-secret', 'old-secret']);
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.PORT).toBe(3000);
  });

  it('names each bad variable in one error', () => {
    try {
      parseConfig({ PORT: '70000', PROCESSING_MODE: 'later', MAX_BODY_BYTES: '-1', LOG_LEVEL: 'loud' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const names = (error as ConfigError).problems.map((problem) => problem.split(':')[0]);
      expect(names.sort()).toEqual(['LOG_LEVEL', 'MAX_BODY_BYTES', 'PORT', 'PROCESSING_MODE']);
    }
  });
});

describe('the lease outlasts the call: one rule for the relay and the async worker', () => {
  it('refuses a request deadline (the application timeout) at or over the inbox lease in async mode', () => {
    const async = { PROCESSING_MODE: 'async', INBOX_LEASE_MS: '30000' };
    expect(configProblems(() => parseConfig({ ...async, HANDLER_DEADLINE_MS: '30000' }))).toEqual([
      'HANDLER_DEADLINE_MS: must be below INBOX_LEASE_MS in async mode',
    ]);
    expect(configProblems(() => parseConfig({ ...async, HANDLER_DEADLINE_MS: '29999' }))).toEqual([]);
    // The defaults start in either mode.
    expect(configProblems(() => parseConfig({ PROCESSING_MODE: 'async' }))).toEqual([]);
    // No worker leases events in sync mode: a long request deadline is no lease's business.
    expect(configProblems(() => parseConfig({ HANDLER_DEADLINE_MS: '60000' }))).toEqual([]);
  });

  it('refuses both at once, each named', () => {
    const env = { PROCESSING_MODE: 'async', HANDLER_DEADLINE_MS: '40000', OUTBOX_TIMEOUT_MS: '40000' };
    expect(configProblems(() => parseConfig(env))).toEqual([
      'OUTBOX_TIMEOUT_MS: must be below OUTBOX_LEASE_MS',
      'HANDLER_DEADLINE_MS: must be below INBOX_LEASE_MS in async mode',
    ]);
  });
});

describe('the rest of the contract', () => {
  it('defaults every worker, outbox and retention setting as the contract says', () => {
    expect(parseConfig({})).toMatchObject({
      INBOX_MAX_BACKLOG: 10000,
      INBOX_MAX_ATTEMPTS: 10,
      INBOX_LEASE_MS: 30000,
      INBOX_BACKOFF_BASE_MS: 1000,
      INBOX_BACKOFF_MAX_MS: 300000,
      WORKER_INTERVAL_MS: 1000,
      OUTBOX_MAX_ATTEMPTS: 10,
      OUTBOX_BACKOFF_BASE_MS: 1000,
      OUTBOX_BACKOFF_MAX_MS: 3600000,
      OUTBOX_LEASE_MS: 30000,
      OUTBOX_TIMEOUT_MS: 10000,
      RELAY_INTERVAL_MS: 1000,
      PAYLOAD_RETENTION_DAYS: 7,
      EVENT_RETENTION_DAYS: 30,
    });
  });

  it('refuses a non-HTTP outbox target and short tokens', () => {
    expect(() => parseConfig({ OUTBOX_TARGET_URL: 'ftp://example.com/x' })).toThrow(/OUTBOX_TARGET_URL/);
    expect(() => parseConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN/);
    expect(parseConfig({ OUTBOX_TARGET_URL: 'http://127.0.0.1:9999/hook' }).OUTBOX_TARGET_URL).toBe(
      'http://127.0.0.1:9999/hook',
    );
  });
});

describe('secrets and tokens from files (`<VARIABLE>_FILE`)', () => {
  const files: Record<string, string> = {
    '/run/secrets/github': 'correct horse battery staple\n',
    '/run/secrets/rotation': 'new secret with spaces\r\n\nold secret with spaces\n',
    '/run/secrets/admin': 'admin-token-0123456789abcdef\n',
    '/run/secrets/two-tokens': 'admin-token-0123456789abcdef\nmetrics-token-0123456789abc\n',
    '/run/secrets/empty': '\n\n',
  };
  const readFile = (path: string) => {
    const content = files[path];
    if (content === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return content;
  };
  const problemsOf = (env: Record<string, string>, sources: Parameters<typeof parseConfig>[1] = { readFile }) =>
    configProblems(() => parseConfig(env, sources));

  it('takes each line whole, spaces kept: a secret with spaces stays one secret', () => {
    const config = parseConfig({ GITHUB_WEBHOOK_SECRET_FILE: '/run/secrets/github' }, { readFile });
    expect(senderSecrets(config).github).toEqual(['correct horse battery staple']);
  });

  it('one secret per line for rotation, blank lines and CRs dropped', () => {
    const config = parseConfig({ STANDARD_WEBHOOK_SECRET_FILE: '/run/secrets/rotation' }, { readFile });
    expect(senderSecrets(config).standard).toEqual(['new secret with spaces', 'old secret with spaces']);
  });

  it("works for every sender's secret and both tokens", () => {
    const config = parseConfig(
      {
        ACME_WEBHOOK_SECRET_FILE: '/run/secrets/github',
        STRIPE_WEBHOOK_SECRET_FILE: '/run/secrets/github',
        SHOPIFY_WEBHOOK_SECRET_FILE: '/run/secrets/github',
        SLACK_SIGNING_SECRET_FILE: '/run/secrets/github',
        ADMIN_TOKEN_FILE: '/run/secrets/admin',
        METRICS_TOKEN_FILE: '/run/secrets/admin',
      },
      { readFile },
    );
    const secrets = senderSecrets(config);
    for (const name of ['acme', 'stripe', 'shopify', 'slack']) {
      expect(secrets[name]).toEqual(['correct horse battery staple']);
    }
    expect(config.ADMIN_TOKEN).toBe('admin-token-0123456789abcdef');
    expect(config.METRICS_TOKEN).toBe('admin-token-0123456789abcdef');
  });

  it('keeps the space-separated form of the variable itself', () => {
    const config = parseConfig({ GITHUB_WEBHOOK_SECRET: 'correct horse' }, { readFile });
    expect(senderSecrets(config).github).toEqual(['correct', 'horse']);
  });

  it('names the variable when its file cannot be used, or both forms are set', () => {
    expect(problemsOf({ GITHUB_WEBHOOK_SECRET_FILE: '/run/secrets/missing' })).toEqual([
      'GITHUB_WEBHOOK_SECRET_FILE: cannot read /run/secrets/missing (ENOENT)',
    ]);
    expect(problemsOf({ ACME_WEBHOOK_SECRET_FILE: '/run/secrets/empty' })).toEqual([
      'ACME_WEBHOOK_SECRET_FILE: the file holds no secret',
    ]);
    expect(problemsOf({ ADMIN_TOKEN_FILE: '/run/secrets/two-tokens' })).toEqual([
      'ADMIN_TOKEN_FILE: holds 2 lines, not one token',
    ]);
    const both = problemsOf({ ACME_WEBHOOK_SECRET: 'x'.repeat(20), ACME_WEBHOOK_SECRET_FILE: '/run/secrets/github' });
    expect(both).toEqual(['ACME_WEBHOOK_SECRET_FILE: ACME_WEBHOOK_SECRET is set too; keep one of them']);
    // Where there are no files (the Worker), the variable is refused by name.
    expect(problemsOf({ ACME_WEBHOOK_SECRET_FILE: '/run/secrets/github' }, {})).toEqual([
      'ACME_WEBHOOK_SECRET_FILE: files cannot be read here; set ACME_WEBHOOK_SECRET itself',
    ]);
  });

  it('warns, naming the variable and never the value, for a secret under 16 bytes', () => {
    const warnings: ConfigWarning[] = [];
    parseConfig(
      {
        GITHUB_WEBHOOK_SECRET: 'long-enough-secret-1 horse',
        ACME_WEBHOOK_SECRET: 'sixteen-bytes-ok',
        SLACK_SIGNING_SECRET_FILE: '/run/secrets/rotation',
        // 15 characters but 16 bytes in UTF-8: bytes are what an HMAC key is made of.
        STRIPE_WEBHOOK_SECRET: 'éabcdefghijklmn',
      },
      { readFile, warn: (warning) => warnings.push(warning) },
    );
    expect(warnings.map((warning) => warning.variable)).toEqual(['GITHUB_WEBHOOK_SECRET']);
    expect(JSON.stringify(warnings)).not.toContain('horse');
  });
});

describe('bearer tokens (RFC 6750 syntax)', () => {
  it.each([
    ['an exclamation mark', 'admin-token-0123456789!'],
    ['a space', 'admin token 0123456789abc'],
    ['a colon', 'admin:token:0123456789abc'],
    ['= before the end', 'admin=token-0123456789abc'],
  ])('refuses a token with %s, naming the variable and not the value', (_name, token) => {
    for (const variable of ['ADMIN_TOKEN', 'METRICS_TOKEN']) {
      try {
        parseConfig({ [variable]: token });
        expect.unreachable();
      } catch (error) {
        expect((error as ConfigError).problems).toEqual([expect.stringMatching(new RegExp(`^${variable}: `))]);
        expect((error as ConfigError).message).not.toContain(token);
      }
    }
  });

  it('accepts every character the syntax allows, with trailing =', () => {
    const token = 'Az09-._~+/token-0123456789==';
    expect(parseConfig({ ADMIN_TOKEN: token, METRICS_TOKEN: token })).toMatchObject({
      ADMIN_TOKEN: token,
      METRICS_TOKEN: token,
    });
  });
});

describe('DATABASE_URL', () => {
  it.each([
    ['a port beyond 65535', 'postgres://app:pw-secret@db.internal:99999/app'],
    ['a port that is no number', 'postgres://app:pw-secret@db.internal:port/app'],
  ])('names the variable for %s, without echoing it', (_name, url) => {
    try {
      parseConfig({ DATABASE_URL: url });
      expect.unreachable();
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^DATABASE_URL: .*port/)]);
      expect((error as ConfigError).message).not.toContain('pw-secret');
    }
  });

  it('accepts what postgres.js reads: several hosts, sockets, parameters', () => {
    for (const url of [
      'postgres://app:pw@h1:5432,h2:5433/app',
      'postgresql:///app?host=/var/run/postgresql',
      'postgres://app:p%40ss@db:6543/app?sslmode=require',
    ]) {
      expect(parseConfig({ DATABASE_URL: url }).DATABASE_URL).toBe(url);
    }
  });
});

describe('which senders count as configured: one rule for npm start, the Worker, db:start and send', () => {
  const ed25519Hex = 'ab'.repeat(32);

  it("enabledSenderNames: a secret or a public key enables, in the registry's order; acme with the development secret", () => {
    expect(enabledSenderNames({})).toEqual([]);
    expect(enabledSenderNames({}, { developmentSecret: true })).toEqual(['acme']);
    expect(
      enabledSenderNames({
        github: { secrets: ['s'], publicKeys: [] },
        discord: { secrets: [], publicKeys: [ed25519Hex] },
        stripe: { secrets: [], publicKeys: [], url: 'https://example.com/' },
        gtihub: { secrets: ['s'], publicKeys: [] },
      }),
    ).toEqual(senderNames.filter((name) => name === 'github' || name === 'discord'));
  });

  it('a public key counts as a secret does: acme gets no development secret', () => {
    const config = parseConfig({ DISCORD_WEBHOOK_PUBLIC_KEY: ed25519Hex });
    expect(configuredSenders(config.senderSettings)).toEqual({
      enablingVariables: ['DISCORD_WEBHOOK_PUBLIC_KEY'],
      unknownVariables: [],
    });
    expect(developmentSecretUse(config)).toEqual({
      inUse: false,
      reason: 'a sender secret or public key is set',
      variables: ['DISCORD_WEBHOOK_PUBLIC_KEY'],
    });
  });

  it('a public-key sender counts against the retention too: its retry window is checked (SendGrid, Discord)', () => {
    const config = parseConfig({
      NODE_ENV: 'production',
      EVENT_RETENTION_DAYS: '0',
      SENDGRID_WEBHOOK_PUBLIC_KEY: 'sendgrid-public-key',
      DISCORD_WEBHOOK_PUBLIC_KEY: ed25519Hex,
    });
    const problems = configProblems(() => checkSenderLimits(config));
    const days = (name: string) => redeliveryBySender.get(name)?.windowDays;
    expect(problems).toEqual([
      `EVENT_RETENTION_DAYS: shorter than the retry window in days of sendgrid (${days('sendgrid')}), discord (${days('discord')}); set at least ${days('discord')}, or a retry that arrives after the purge is applied again`,
    ]);
  });

  it('a variable naming no sender counts nowhere: acme keeps its development secret outside production', () => {
    const config = parseConfig({
      GTIHUB_WEBHOOK_SECRET: 'misspelt-secret-VALUE',
      GTIHUB_WEBHOOK_URL: 'https://a.test/',
    });
    expect(configuredSenders(config.senderSettings)).toEqual({
      enablingVariables: [],
      unknownVariables: ['GTIHUB_WEBHOOK_SECRET'],
    });
    expect(developmentSecretUse(config).inUse).toBe(true);
    expect(developmentSecretUse({ ...config, NODE_ENV: 'production' }).inUse).toBe(false);
  });

  it('a signed URL alone enables nothing, and a known sender beside an unknown one is what counts', () => {
    const config = parseConfig({
      HUBSPOT_WEBHOOK_URL: 'https://hooks.example.com/webhooks/hubspot',
      SLACK_SIGNING_SECRET: 'slack-signing-secret-VALUE',
      GTIHUB_WEBHOOK_PUBLIC_KEY: ed25519Hex,
    });
    expect(configuredSenders(config.senderSettings)).toEqual({
      enablingVariables: ['SLACK_SIGNING_SECRET'],
      unknownVariables: ['GTIHUB_WEBHOOK_PUBLIC_KEY'],
    });
    expect(developmentSecretUse(config).inUse).toBe(false);
  });
});
