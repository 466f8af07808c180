// Node's process metrics for /metrics, under the names every Node dashboard and alert expects
// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_eventloop_lag_*`,
// `nodejs_gc_duration_seconds`, `nodejs_heap_*`, ...): prom-client's default collectors, in a
// registry of their own. Node only: the Worker has no process to describe, and prom-client needs
// Node's runtime, so only src/entry/node.ts attaches this.
import { collectDefaultMetrics, Registry } from 'prom-client';

/** Starts the collectors (event-loop delay and GC observers run from now on) and returns the scrape text. */
export function processMetrics(): () => Promise<string> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return () => registry.metrics();
}
