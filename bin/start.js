#!/usr/bin/env node
// `npm start`: runs the Node entry as `npm run build` bundled it. Nothing is compiled or written
// here, so the service starts from a read-only image.
import { availableParallelism } from 'node:os';
import { runBuilt } from './built.js';

// libuv's pool runs every Web Crypto HMAC of the intake. Its default of four threads on a two-core
// machine preempts the event loop, the intake's bottleneck; no more threads than cores (at least
// two, so one slow DNS lookup never holds up verification; at most libuv's own four) answered about
// 5% more deliveries with a shorter tail (docs/decisions/0019-libuv-pool-sized-to-the-cores.md).
// Read once, when the pool first starts, which on Node 22 and later is after this line; an
// operator's own UV_THREADPOOL_SIZE wins.
process.env.UV_THREADPOOL_SIZE ??= String(Math.min(4, Math.max(2, availableParallelism())));

await runBuilt('entry/node.mjs');
