// `npm run bench:destination-down`: how long an operator waits, with default settings, between an
// outbox target going away and the overview's banner saying so (issue 35 item 2). A latency of
// timers and probes, not a speed: the machine's load hardly moves it.
//
// Runs the service as `npm start` does (bin/start.js, production mode, every setting at its default
// but the target, an acme secret and ADMIN_TOKEN) on a fresh database, with an HTTP target of its own
// that answers 200, and one signed acme event every 200 ms (each enqueues a message). Each round:
// wait until the destination published and is healthy, close the target's port (connections refused
// from then on), and read the dashboard's overview every 50 ms until its banner "Destinations not
// healthy" is there; then listen on the port again and wait until the banner is gone. Prints each
// round's seconds and the median and the longest. DESTINATION_DOWN_ROUNDS (5) rounds; the database
// as bench:outbox's (BENCH_DATABASE_URL, else an embedded server).

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/entry/setup/free-port.ts';
import { signedAcmeEvent } from './lib/acme.ts';
import { freshDatabase } from './lib/database.ts';
import { exitWhenDone } from './lib/exit.ts';
import { startService } from './lib/service.ts';

const ROUNDS = Number(process.env.DESTINATION_DOWN_ROUNDS ?? 5);
const SECRET = 'destination-down-bench-secret';
const TOKEN = 'destination-down-bench-token-0123456789';
const BANNER = 'id="unhealthy-destinations"';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function listen(port: number): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

async function main(): Promise<boolean> {
  const work = mkdtempSync(join(tmpdir(), 'bench-destination-down-'));
  const database = await freshDatabase(join(work, 'pg'));
  const port = await freePort();
  let target = await listen(port);
  const service = await startService({
    env: {
      NODE_ENV: 'production',
      DATABASE_URL: database.url,
      ACME_WEBHOOK_SECRET: SECRET,
      ADMIN_TOKEN: TOKEN,
      OUTBOX_TARGET_URL: `http://127.0.0.1:${port}/outbox`,
      LOG_LEVEL: 'warn',
    },
    stdoutFile: join(work, 'stdout.log'),
    stderrFile: join(work, 'stderr.log'),
  });
  const runId = `down${Date.now()}`;
  let sent = 0;
  let sending = true;
  const sender = (async () => {
    while (sending) {
      const event = signedAcmeEvent({
        secret: SECRET,
        runId,
        index: sent++,
        nowSeconds: Math.floor(Date.now() / 1000),
      });
      await fetch(`${service.origin}${event.path}`, { method: 'POST', headers: event.headers, body: event.body });
      await sleep(200);
    }
  })();
  const bannerOn = async () => {
    const page = await fetch(`${service.origin}/admin`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return (await page.text()).includes(BANNER);
  };
  const waitFor = async (wanted: boolean, limitMs: number) => {
    const deadline = Date.now() + limitMs;
    while ((await bannerOn()) !== wanted) {
      if (Date.now() > deadline) throw new Error(`the banner did not turn ${wanted ? 'on' : 'off'} in ${limitMs} ms`);
      await sleep(50);
    }
  };
  const seconds: number[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      // Healthy and publishing: the banner off, and a few seconds of messages through the target.
      await waitFor(false, 120_000);
      await sleep(3_000);
      const goneAt = Date.now();
      await close(target);
      await waitFor(true, 120_000);
      const taken = (Date.now() - goneAt) / 1000;
      seconds.push(taken);
      console.log(`round ${round}: banner on ${taken.toFixed(1)} s after the target went away`);
      target = await listen(port);
    }
  } finally {
    sending = false;
    await sender.catch(() => {});
    await service.stop();
    await close(target).catch(() => {});
    await database.dispose();
    rmSync(work, { recursive: true, force: true });
  }
  const sorted = [...seconds].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  console.log(
    `target gone -> banner, default settings, ${ROUNDS} rounds, ${sent} events sent: median ${median.toFixed(1)} s, ` +
      `longest ${(sorted.at(-1) ?? 0).toFixed(1)} s`,
  );
  return true;
}

exitWhenDone(main);
