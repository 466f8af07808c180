// Configuration parsing: the contract's defaults, rotation lists, and errors that name variables.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, providerSecrets } from '../src/config.ts';

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
    expect(providerSecrets(config).acme).toEqual(['new-secret', 'old-secret']);
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
