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
