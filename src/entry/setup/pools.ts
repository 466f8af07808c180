// How `npm start` splits DB_POOL_MAX into pools, each serving one kind of work, so that one kind
// can never take the connections another needs (docs/processing.md, "Connections").
import type { Config } from '../../config.ts';

export interface PoolSizes {
  /** The intake, `/readyz`, `/metrics`, the admin surface. */
  requests: number;
  /** The worker's lanes, the relay, the sweeper, the purge, the counters' fold, bulk jobs, refusals. */
  background: number;
  /**
   * The delivery log's writes alone (0 with the log off, and in sync mode, where the log shares the
   * background connection that nothing holds for long): its promise, a record in the database
   * within about one flush interval of its answer, holds only if its write never queues behind a
   * worker batch or a publish (an attack run saw it 6.2 s behind a busy async worker).
   */
  deliveryLog: number;
}

/**
 * Requests get the largest share; the background jobs a small pool of their own, so an intake burst
 * queues on its own connections and never takes the ones the worker needs to drain the backlog it
 * builds. Async mode gives the background 40% (at least one, at most four: four worker connections
 * applying one batch each), and the delivery log one connection of its own, out of the background's
 * share while it has two or more (a worker lane fewer: measured, taking it from the requests cost the
 * intake 5-11%, bench:ab), else out of the requests'. Sync mode applies in the request: the relay and
 * the purge get one connection, which the log shares (nothing there holds it for long). Each pool has
 * at least one connection, so the total exceeds DB_POOL_MAX only when DB_POOL_MAX is too small to give
 * every pool one.
 */
export function splitPool(max: number, mode: Config['PROCESSING_MODE'], options: { deliveryLog: boolean }): PoolSizes {
  if (mode !== 'async') return { requests: Math.max(1, max - 1), background: 1, deliveryLog: 0 };
  const share = Math.max(1, Math.min(4, Math.floor(max * 0.4)));
  const deliveryLog = options.deliveryLog ? 1 : 0;
  const fromBackground = deliveryLog === 1 && share > 1;
  return {
    requests: Math.max(1, max - share - (fromBackground ? 0 : deliveryLog)),
    background: fromBackground ? share - 1 : share,
    deliveryLog,
  };
}
