// Retry timing and outcome classes, as pure functions: full jitter within the capped exponential
// ceiling, Retry-After in both forms, and which HTTP answers retry, die or count as published.
import { describe, expect, it } from 'vitest';
import { backoffDelayMs, parseRetryAfter, retryDelayMs } from '../src/lib/backoff.ts';
import { classifyNetworkError, classifyStatus } from '../src/outbox/publishers/publisher.ts';

const policy = { baseMs: 1000, maxMs: 60_000 };
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('backoffDelayMs (capped exponential, full jitter)', () => {
  it('draws uniformly below base * 2^(failures - 1)', () => {
    expect(backoffDelayMs(policy, 1, () => 0)).toBe(0);
    expect(backoffDelayMs(policy, 1, () => 0.5)).toBe(500);
    expect(backoffDelayMs(policy, 2, () => 0.5)).toBe(1000);
    expect(backoffDelayMs(policy, 4, () => 0.5)).toBe(4000);
    expect(backoffDelayMs(policy, 4, () => 0.999_999)).toBeLessThan(8000);
  });

  it('never exceeds the cap, however many failures', () => {
    expect(backoffDelayMs(policy, 7, () => 0.5)).toBe(30_000);
    expect(backoffDelayMs(policy, 50, () => 0.5)).toBe(30_000);
    expect(backoffDelayMs(policy, 5000, () => 0.999_999)).toBeLessThan(60_000);
  });

  it('prefers the server-given delay, capped', () => {
    expect(retryDelayMs(policy, 3, () => 0.5, 120)).toBe(120);
    expect(retryDelayMs(policy, 3, () => 0.5, 10_000_000)).toBe(60_000);
    expect(retryDelayMs(policy, 3, () => 0.5, undefined)).toBe(2000);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP date relative to now, and a past date as now', () => {
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const value of [null, undefined, '', '-5', '1.5', 'soon', '2026-06-01T12:00:00Z']) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
  });
});

describe('classifyStatus', () => {
  it('counts any 2xx as published', () => {
    for (const status of [200, 201, 202, 204, 299]) expect(classifyStatus(status, null, NOW).outcome).toBe('published');
  });

  it('retries 408, 409, 425, 5xx and 3xx (redirects are not followed)', () => {
    for (const status of [408, 409, 425, 500, 502, 503, 504, 301, 302, 307, 308]) {
      expect(classifyStatus(status, null, NOW)).toEqual({ outcome: 'retry', error: `http ${status}` });
    }
  });

  it('blames the destination for 401, 403, 404 and 405: the message is held, not refused', () => {
    for (const status of [401, 403, 404, 405]) {
      expect(classifyStatus(status, null, NOW)).toEqual({ outcome: 'misdirected', error: `http ${status}` });
    }
  });

  it('blames the message for any other 4xx', () => {
    for (const status of [400, 402, 410, 413, 415, 422, 451]) {
      expect(classifyStatus(status, null, NOW)).toEqual({ outcome: 'rejected', error: `http ${status}` });
    }
  });

  it('paces on a 429, with its Retry-After when it gave one', () => {
    expect(classifyStatus(429, null, NOW)).toEqual({ outcome: 'paced', error: 'http 429' });
    expect(classifyStatus(429, '30', NOW)).toEqual({ outcome: 'paced', error: 'http 429', retryAfterMs: 30_000 });
  });

  it('takes Retry-After from 429 and 503 only', () => {
    expect(classifyStatus(503, '5', NOW)).toEqual({ outcome: 'retry', error: 'http 503', retryAfterMs: 5000 });
    expect(classifyStatus(500, '30', NOW)).toEqual({ outcome: 'retry', error: 'http 500' });
  });
});

describe('classifyNetworkError', () => {
  it('names a timeout, a system code, or just a network error; never the message', () => {
    const aborted = AbortSignal.abort();
    const live = new AbortController().signal;
    const refused = new TypeError('fetch failed to http://user:pw@host', {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(classifyNetworkError(refused, aborted)).toEqual({ outcome: 'retry', error: 'timeout' });
    // A refused connection says nothing about the message: the target is out of reach, no attempt counts.
    expect(classifyNetworkError(refused, live)).toEqual({ outcome: 'unavailable', error: 'network ECONNREFUSED' });
    expect(classifyNetworkError(new TypeError('fetch failed'), live)).toEqual({
      outcome: 'retry',
      error: 'network error',
    });
  });
});
