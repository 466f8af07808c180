// The shared delivery suite (test/shared/delivery-contract.ts) against the app in Node, with the wall
// clock as the Worker has it; test/worker/delivery-contract.test.ts runs the same suite in workerd.
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { describeDeliveryContract } from './shared/delivery-contract.ts';

const { db, sql } = await useTestDatabase();
const app = await buildTestApp(db, { clock: () => Date.now() });

describeDeliveryContract('Node', () => ({ request: app.request, sql }));
