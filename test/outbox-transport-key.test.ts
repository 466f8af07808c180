// The deduplication key's transport form (src/outbox/transport-key.ts) against the examples
// docs/outbox-brokers.md gives consumers, so the page and the code cannot drift apart.
import { describe, expect, it } from 'vitest';
import { transportKey } from '../src/outbox/transport-key.ts';
import { documentedTransportKey } from './helpers/outbox.ts';

describe('the transport form of a deduplication key', () => {
  it('is the key itself when it is short printable ASCII', async () => {
    for (const key of ['acme:evt_1:subscription.changed', `a${'b'.repeat(199)}`, '!~']) {
      expect(await transportKey(key)).toBe(key);
    }
  });

  it('is sha256: + base64url of the UTF-8 bytes otherwise, as the documentation shows', async () => {
    // The examples printed in docs/outbox-brokers.md.
    expect(await transportKey('acme:evt_café:subscription.changed')).toBe(
      'sha256:tCGVzzJA4s_3Aki5_Pq-6Nj9HmtE3vdPiOkBfVs6ltU',
    );
    expect(await transportKey('acme:evt\r\nX: 1:subscription.changed')).toBe(
      'sha256:IIEHMycR6ZrQdAYUMU5WnJDP4dXvQWb-LT00IRc9JtE',
    );
    for (const key of [
      `a${'b'.repeat(200)}`,
      'acme:evt 1:subscription.changed',
      'acme:evt\u0000:x',
      `acme:${'\u{1F600}'.repeat(100)}:x`,
      '',
    ]) {
      const form = await transportKey(key);
      expect(form).toBe(documentedTransportKey(key));
      expect(form).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    }
  });

  it('hashes a key that already reads as a digest, so the two forms never meet', async () => {
    const lookalike = await transportKey('acme:evt_café:subscription.changed');
    expect(await transportKey(lookalike)).not.toBe(lookalike);
    expect(await transportKey(lookalike)).toBe(documentedTransportKey(lookalike));
  });
});
