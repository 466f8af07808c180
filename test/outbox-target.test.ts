// OUTBOX_TARGET_URL's forms (the contract's § Outbox delivery): what each scheme is read as, and the
// refusals, each naming the variable and the fix without quoting the URL (it may hold a password).
// The Worker's choice refuses broker targets; the Node entry builds each broker's publisher without
// connecting, so a bad target leaves nothing behind.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { nodePublisherFor } from '../src/outbox/publishers/node.ts';
import { publisherFor } from '../src/outbox/publishers/publisher.ts';
import { DEFAULT_REDIS_DEDUP_WINDOW_S, parseOutboxTarget } from '../src/outbox/target.ts';

const logger = createLogger({ level: 'silent', now: () => new Date() });

function refusal(url: string): string {
  try {
    parseOutboxTarget(url);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error(`${url} was accepted`);
}

describe('OUTBOX_TARGET_URL', () => {
  it('passes the configuration schema with every publisher scheme, and no other', () => {
    for (const url of [
      'https://hooks.example.com/in',
      'nats://127.0.0.1:4222?stream=OUTBOX',
      'amqp://guest:guest@127.0.0.1:5672?exchange=outbox',
      'amqps://user:pass@rabbit.example.com/prod?exchange=outbox',
      'redis://127.0.0.1:6379/2?stream=outbox',
      'rediss://default:secret@redis.example.com:6380?stream=outbox',
    ]) {
      expect(parseConfig({ OUTBOX_TARGET_URL: url }).OUTBOX_TARGET_URL).toBe(url);
    }
    expect(() => parseConfig({ OUTBOX_TARGET_URL: 'kafka://127.0.0.1:9092?topic=x' })).toThrow(/OUTBOX_TARGET_URL/);
  });

  it('reads each broker form', () => {
    expect(parseOutboxTarget('nats://relay:s%40cret@127.0.0.1:4222?stream=OUTBOX&subject_prefix=acme.events.')).toEqual(
      {
        kind: 'nats',
        server: 'nats://127.0.0.1:4222',
        user: 'relay',
        pass: 's@cret',
        stream: 'OUTBOX',
        subjectPrefix: 'acme.events.',
      },
    );
    // Without credentials: no user or password at all, not empty ones.
    expect(parseOutboxTarget('nats://127.0.0.1:4222?stream=OUTBOX')).toEqual({
      kind: 'nats',
      server: 'nats://127.0.0.1:4222',
      stream: 'OUTBOX',
      subjectPrefix: 'webhook-inbox.',
    });
    expect(parseOutboxTarget('https://hooks.example.com/in')).toEqual({
      kind: 'http',
      url: 'https://hooks.example.com/in',
    });
    expect(parseOutboxTarget('amqps://user:pass@rabbit.example.com/prod?exchange=outbox')).toEqual({
      kind: 'amqp',
      url: 'amqps://user:pass@rabbit.example.com/prod',
      exchange: 'outbox',
    });
    expect(parseOutboxTarget('amqp://guest:guest@127.0.0.1:5672/prod?exchange=outbox&heartbeat=30')).toEqual({
      kind: 'amqp',
      url: 'amqp://guest:guest@127.0.0.1:5672/prod?heartbeat=30',
      exchange: 'outbox',
    });
    expect(parseOutboxTarget('redis://127.0.0.1:6379/3?stream=outbox&dedup_window_s=600')).toEqual({
      kind: 'redis',
      url: 'redis://127.0.0.1:6379/3',
      stream: 'outbox',
      dedupWindowS: 600,
    });
    expect(parseOutboxTarget('redis://127.0.0.1:6379?stream=outbox')).toMatchObject({
      dedupWindowS: DEFAULT_REDIS_DEDUP_WINDOW_S,
    });
  });

  it('words each refusal with the variable, the problem and the form that fixes it', () => {
    const says = (words: string) => `invalid configuration: OUTBOX_TARGET_URL: ${words}`;
    expect(refusal('hooks.example.com/in')).toBe(says('not a URL'));
    expect(refusal('amqp://guest:hunter2@127.0.0.1:5672')).toBe(
      says('amqp:// targets need ?exchange= (amqp://user:pass@host:port[/vhost]?exchange=NAME)'),
    );
    expect(refusal('rediss://127.0.0.1:6379')).toBe(
      says('rediss:// targets need ?stream= (redis://[user:pass@]host:port[/db]?stream=KEY)'),
    );
    expect(refusal('redis://127.0.0.1:6379?stream=s&dedup_window_s=1.5')).toBe(
      says('dedup_window_s must be a whole number of seconds, at least 1'),
    );
    expect(refusal('nats://127.0.0.1:4222?stream=S&subject_prefix=no-dot')).toBe(
      says('subject_prefix must be dot-separated tokens ending in a dot, e.g. "webhook-inbox."'),
    );
    expect(refusal('kafka://127.0.0.1:9092?topic=x')).toBe(
      says('unknown scheme "kafka" (http, https, nats, amqp, amqps, redis, rediss)'),
    );
    // A window of one second is the shortest there is, and allowed.
    expect(parseOutboxTarget('redis://127.0.0.1:6379?stream=s&dedup_window_s=1')).toMatchObject({ dedupWindowS: 1 });
  });

  it('refuses a broker target without its stream or exchange, naming the form and never the URL', () => {
    expect(refusal('nats://relay:hunter2@127.0.0.1:4222')).toBe(
      'invalid configuration: OUTBOX_TARGET_URL: nats:// targets need ?stream= (nats://[user:pass@]host:port?stream=NAME[&subject_prefix=P])',
    );
    expect(refusal('amqp://guest:hunter2@127.0.0.1:5672?exchange=')).toMatch(/amqp:\/\/ targets need \?exchange=/);
    expect(refusal('redis://:hunter2@127.0.0.1:6379')).toMatch(/redis:\/\/ targets need \?stream=/);
    expect(refusal('redis://127.0.0.1:6379?stream=s&dedup_window_s=0')).toMatch(
      /dedup_window_s must be a whole number/,
    );
    expect(refusal('nats://127.0.0.1:4222?stream=S&subject_prefix=no-dot')).toMatch(/subject_prefix must be/);
    expect(refusal('nats://127.0.0.1:4222?stream=S&subject_prefix=a.*.')).toMatch(/subject_prefix must be/);
    for (const url of ['nats://relay:hunter2@127.0.0.1:4222', 'redis://:hunter2@127.0.0.1:6379']) {
      expect(refusal(url)).not.toContain('hunter2');
    }
  });

  it('chooses the publisher by scheme on Node, and refuses brokers on the portable (Worker) path', async () => {
    const kinds = [
      ['http://127.0.0.1:1/hook', 'http'],
      ['nats://127.0.0.1:1?stream=S', 'nats'],
      ['amqp://guest:guest@127.0.0.1:1?exchange=e', 'rabbitmq'],
      ['redis://127.0.0.1:1?stream=s', 'redis'],
    ] as const;
    for (const [url, kind] of kinds) {
      const publisher = nodePublisherFor(url, { clock: Date.now, logger, timeoutMs: 1000 });
      expect(publisher.kind).toBe(kind);
      // Nothing was opened: closing a publisher that never published has nothing to do.
      await publisher.close?.();
    }
    expect(nodePublisherFor(undefined, { clock: Date.now, logger, timeoutMs: 1000 }).kind).toBe('log');
    expect(publisherFor('http://127.0.0.1:1/hook', { clock: Date.now, logger }).kind).toBe('http');
    expect(() => publisherFor('redis://127.0.0.1:1?stream=s', { clock: Date.now, logger })).toThrow(
      /OUTBOX_TARGET_URL: redis targets are published by the Node relay .*OUTBOX_QUEUE binding/,
    );
  });
});
