// No secret, connection string or payload in logs or error bodies: the real service, fed valid and
// hostile deliveries, with everything it printed and answered scanned for them.
// Needs a process: the built service's answers and headers as a client sees them.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { acmeEvent, signedHeaders, TEST_SECRET } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { startListeningService } from './helpers/process.ts';

const { url } = await useTestDatabase();

/** Trust auth ignores a password; an embedded server has one already. Either way there is one to look for. */
function withPassword(databaseUrl: string): { url: string; password: string } {
  const parsed = new URL(databaseUrl);
  if (parsed.password === '') parsed.password = `pw${randomBytes(8).toString('hex')}`;
  return { url: parsed.toString(), password: decodeURIComponent(parsed.password) };
}

describe('what leaves the process', () => {
  it('never carries a secret, the connection string or payload content', async () => {
    const database = withPassword(url);
    const marker = `payload-marker-${randomBytes(6).toString('hex')}`;
    const service = await startListeningService({
      DATABASE_URL: database.url,
      ACME_WEBHOOK_SECRET: `${TEST_SECRET} previous-secret-${marker}`,
      LOG_LEVEL: 'debug',
    });
    const answers: string[] = [];
    const post = async (body: string, headers: Record<string, string>) => {
      const response = await fetch(`${service.origin}/webhooks/acme`, { method: 'POST', body, headers });
      answers.push(`${response.status} ${await response.text()}`);
    };
    const now = Math.floor(Date.now() / 1000);
    try {
      const event = acmeEvent({
        created: now,
        data: { id: `sub_${marker}`, status: 'active', email: `${marker}@x.test` },
      });
      const valid = JSON.stringify(event);
      await post(valid, await signedHeaders(valid, { timestamp: now }));
      await post(valid, await signedHeaders(valid, { timestamp: now }));
      await post(valid.replace('active', 'unpaid'), await signedHeaders(valid, { timestamp: now }));
      await post(valid, await signedHeaders(valid, { timestamp: now - 3600 }));
      const invalid = JSON.stringify({ ...event, id: '', note: marker });
      await post(invalid, await signedHeaders(invalid, { timestamp: now }));
      const unhandled = JSON.stringify({ ...event, data: { id: 'sub', status: `status-${marker}` } });
      await post(unhandled, await signedHeaders(unhandled, { timestamp: now }));
      await post(valid, { 'content-type': 'text/plain' });
      answers.push(await (await fetch(`${service.origin}/metrics`)).text());
      answers.push(await (await fetch(`${service.origin}/readyz`)).text());
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }

    const printed = service.output();
    expect(printed).toContain('event processed');
    for (const needle of [TEST_SECRET, `previous-secret-${marker}`, database.password, database.url, marker]) {
      expect(printed, `the process printed ${needle}`).not.toContain(needle);
      expect(answers.join('\n'), `an answer carried ${needle}`).not.toContain(needle);
    }
  });
});
