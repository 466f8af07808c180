// GET /metrics: Prometheus text. With METRICS_TOKEN set it requires that bearer token.
import { Hono } from 'hono';
import type { Config } from '../../config.ts';
import type { DatabaseEnv, Executor } from '../../db/client.ts';
import { requireBearer } from '../../lib/bearer.ts';
import type { Clock } from '../../lib/clock.ts';
import type { GaugeSample, Metrics } from '../../lib/metrics.ts';
import { inboxGauges, outboxGauges } from '../reads/gauges.ts';

/** A database-backed gauge, read at each scrape. */
export type GaugeSource = (db: Executor, nowMs: number) => Promise<GaugeSample[]>;

export interface MetricsDeps {
  config: Pick<Config, 'METRICS_TOKEN'>;
  metrics: Metrics;
  gaugeSources: readonly GaugeSource[];
  clock: Clock;
}

export function metricsRoutes(deps: MetricsDeps): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  if (deps.config.METRICS_TOKEN !== undefined) routes.use('/metrics', requireBearer(deps.config.METRICS_TOKEN));
  routes.get('/metrics', async (c) => {
    let gauges: GaugeSample[];
    let databaseUp = 1;
    try {
      gauges = (await Promise.all(deps.gaugeSources.map((source) => source(c.get('db'), deps.clock())))).flat();
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

export const defaultGaugeSources: readonly GaugeSource[] = [inboxGauges, outboxGauges];
