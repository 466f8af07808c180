// GET /metrics: Prometheus text. With METRICS_TOKEN set it requires that bearer token.
import { Hono } from 'hono';
import { requireBearer } from '../admin/bearer.ts';
import type { AppDeps } from '../deps.ts';
import type { GaugeSample } from '../lib/metrics.ts';
import { inboxGauges, outboxGauges } from './gauges.ts';

export function metricsRoutes(deps: AppDeps): Hono {
  const routes = new Hono();
  if (deps.config.METRICS_TOKEN !== undefined) routes.use('/metrics', requireBearer(deps.config.METRICS_TOKEN));
  routes.get('/metrics', async (c) => {
    let gauges: GaugeSample[];
    let databaseUp = 1;
    try {
      gauges = (await Promise.all(deps.gaugeSources.map((source) => source(deps.db, deps.clock())))).flat();
    } catch {
      // The counters are still worth scraping while the database is away; say that it is.
      gauges = [];
      databaseUp = 0;
    }
    gauges.push({ name: 'webhook_database_up', help: 'Whether the database answered this scrape.', value: databaseUp });
    return c.text(await deps.metrics.renderAll(gauges), 200, {
      'content-type': 'text/plain; version=0.0.4; charset=utf-8',
    });
  });
  return routes;
}

export const defaultGaugeSources = [inboxGauges, outboxGauges];
