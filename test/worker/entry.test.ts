// What only the Worker entry does: validate the bindings it is handed, import keys once per set of
// bindings, and run the maintenance steps from the cron trigger, each logging its outcome.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { cronSteps } from '../../src/ops/maintenance/background-steps.ts';

/** The Worker's JSON log lines, swallowed and parsed. */
function captureLogs(): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
    lines.push(JSON.parse(String(line)));
  });
  return lines;
}

async function fetchWith(bindings: Env, path = '/healthz'): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://inbox.test${path}`), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the Worker entry', () => {
  it('answers 503 and names the variable, never its value, while the bindings are invalid', async () => {
    const logs = captureLogs();
    const response = await fetchWith({ ...env, MAX_BODY_BYTES: 'lots-of-bytes' } as Env);

    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.text()).toBe('{"error":"unavailable"}');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'error', msg: 'configuration unusable' });
    expect(String(logs[0]?.error)).toContain('MAX_BODY_BYTES');
    expect(JSON.stringify(logs)).not.toContain('lots-of-bytes');
  });

  it('refuses to serve without any provider secret: a Worker has no development secret', async () => {
    const logs = captureLogs();
    const response = await fetchWith({ ...env, ACME_WEBHOOK_SECRET: '' } as Env);

    expect(response.status).toBe(503);
    expect(String(logs[0]?.error)).toContain('no provider secret is set');
  });

  it('counts a variable naming no sender as no secret, as npm start does in production', async () => {
    const logs = captureLogs();
    const response = await fetchWith({
      ...env,
      ACME_WEBHOOK_SECRET: '',
      GTIHUB_WEBHOOK_SECRET: 'misspelt-VALUE',
    } as Env);

    expect(response.status).toBe(503);
    expect(String(logs[0]?.error)).toContain('no provider secret is set');
    expect(JSON.stringify(logs)).not.toContain('misspelt-VALUE');
  });

  it('names a missing Hyperdrive binding instead of failing on it', async () => {
    const logs = captureLogs();
    const response = await fetchWith({ ...env, HYPERDRIVE: undefined } as unknown as Env);

    expect(response.status).toBe(503);
    expect(String(logs[0]?.error)).toContain('HYPERDRIVE: no Hyperdrive binding');
  });

  it('imports the keys once per set of bindings, not once per request', async () => {
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    const bindings = { ...env } as Env;
    for (let request = 0; request < 3; request++) expect((await fetchWith(bindings)).status).toBe(200);
    expect(importKey).toHaveBeenCalledTimes(1);

    // New bindings (a secret rotated, a new deployment) arrive as a new object: imported afresh.
    expect((await fetchWith({ ...env, ACME_WEBHOOK_SECRET: 'rotated-secret another-one' } as Env)).status).toBe(200);
    expect(importKey).toHaveBeenCalledTimes(3);
  });

  it('is handed the same bindings object by workerd on every invocation, so the cache holds', async () => {
    const invoke = async () => (await exports.default.fetch('https://inbox.test/healthz')).status;
    expect(await invoke()).toBe(200);
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    for (let request = 0; request < 3; request++) expect(await invoke()).toBe(200);
    expect(importKey).not.toHaveBeenCalled();
    // The spy does see imports: a copy of the bindings is another object.
    expect((await fetchWith({ ...env } as Env)).status).toBe(200);
    expect(importKey).toHaveBeenCalledTimes(1);
  });

  it("keeps the isolate's counters across invocations, so /metrics counts this isolate's deliveries", async () => {
    const invoke = (path: string, init?: RequestInit) => exports.default.fetch(`https://inbox.test${path}`, init);
    const rejections = async () => {
      const text = await (await invoke('/metrics')).text();
      const series = 'webhook_rejections_total{provider="acme",reason="unsupported_media_type"} ';
      return Number(
        text
          .split('\n')
          .find((line) => line.startsWith(series))
          ?.slice(series.length) ?? 0,
      );
    };
    const before = await rejections();
    for (let request = 0; request < 2; request++) {
      const refused = await invoke('/webhooks/acme', {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'text/plain' },
      });
      expect(refused.status).toBe(415);
    }
    expect(await rejections()).toBe(before + 2);
  });

  it('runs every maintenance step from the cron trigger and logs each outcome', async () => {
    const logs = captureLogs();
    const ctx = createExecutionContext();
    const controller = createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() });
    worker.scheduled(controller, { ...env, LOG_LEVEL: 'info' } as Env, ctx);
    await waitOnExecutionContext(ctx);

    const steps = logs.filter((line) => line.msg === 'maintenance step');
    expect(steps.map((line) => line.step)).toEqual(cronSteps.map((step) => step.name));
    expect(steps.every((line) => line.outcome === 'ok')).toBe(true);
    expect(steps[0]).toMatchObject({ step: 'database_readiness', migrations: 'current' });
    expect(logs.find((line) => line.msg === 'maintenance run')).toMatchObject({
      level: 'info',
      cron: '* * * * *',
      steps: cronSteps.length,
      failed: 0,
    });
  });
});
