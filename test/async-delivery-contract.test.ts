// The shared delivery suite (test/shared/delivery-contract.ts) against the app in async mode: the
// same requests get the same answers except that an event to apply is queued (202), and after one
// worker pass the rows are the same as in synchronous mode.
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestWorker } from './helpers/worker.ts';
import { describeDeliveryContract } from './shared/delivery-contract.ts';

const { db, sql } = await useTestDatabase();
const app = await buildTestApp(db, { clock: () => Date.now(), config: { PROCESSING_MODE: 'async' } });
const worker = buildTestWorker(db, { now: Date.now() });

describeDeliveryContract('Node, async', () => ({
  request: app.request,
  sql,
  async: {
    settle: () => {
      worker.setNow(Date.now());
      return worker.worker.work();
    },
  },
}));
