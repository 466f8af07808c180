// `npm run bench:reconnect`: genuine senders against a connection flood that reconnects at once
// (issue 34, item 4). One client on 127.0.0.2 holds FLOOD_SOCKETS (1,100) connections to `npm start`,
// each with half a request's headers, and opens a new one FLOOD_RECONNECT_MS (5) after each is
// closed; meanwhile genuine signed deliveries come from 127.0.0.1 (Linux routes all of 127/8 to
// loopback): GENUINE_PER_SECOND (20) on fresh connections, and KEEPALIVE_SENDERS (5) keep-alive
// connections each sending one every KEEPALIVE_GAP_MS (1,500: idle past the shedding grace between
// deliveries), for FLOOD_SECONDS (10). FLOOD_PROCESSES (0: in this process) spreads the flood over
// that many processes of its own, for a faster flood than one event loop opens; FLOOD_ADDRESSES (1)
// spreads its sockets over that many addresses (127.0.2.x), so none holds more than a genuine sender. Prints the share of each kind answered 200 and the flood's
// connections per second; the target is 95% of each (a miss fails the run only with BENCH_STRICT=1).
//
// Environment: the variables above, BENCH_DATABASE_URL (else an embedded server).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signedAcmeEvent } from './lib/acme.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { exitWhenDone } from './lib/exit.ts';
import type { PreparedRequest } from './lib/load.ts';
import { FLOODING_ADDRESS, GENUINE_ADDRESS, startFloodProcesses, startReconnectFlood } from './lib/reconnect-flood.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, type RunningService, startService } from './lib/service.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const floodSockets = Number(process.env.FLOOD_SOCKETS ?? 1100);
const reconnectMs = Number(process.env.FLOOD_RECONNECT_MS ?? 5);
const seconds = Number(process.env.FLOOD_SECONDS ?? 10);
const genuinePerSecond = Number(process.env.GENUINE_PER_SECOND ?? 20);
const keepAliveSenders = Number(process.env.KEEPALIVE_SENDERS ?? 5);
const keepAliveGapMs = Number(process.env.KEEPALIVE_GAP_MS ?? 1500);
/** 0: the flood runs in this process; more: spread over that many processes of its own, for a higher rate. */
const floodProcesses = Number(process.env.FLOOD_PROCESSES ?? 0);
/** 1: every flood socket from 127.0.0.2; more: spread over that many addresses (at most 254), the attack the address rule cannot tell apart. */
const floodAddresses = Number(process.env.FLOOD_ADDRESSES ?? 1);
const TARGET_SHARE = 0.95;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One genuine delivery from 127.0.0.1: whether it was answered 200. */
function deliver(port: number, prepared: PreparedRequest, agent: Agent | false): Promise<boolean> {
  return new Promise((resolve) => {
    const sent = request(
      {
        host: GENUINE_ADDRESS,
        port,
        localAddress: GENUINE_ADDRESS,
        method: 'POST',
        path: prepared.path,
        headers: prepared.headers,
        agent,
      },
      (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode === 200));
      },
    );
    sent.once('error', () => resolve(false));
    sent.end(prepared.body);
  });
}

async function main(): Promise<boolean> {
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-reconnect-'));
  chmodSync(tmp, 0o755);
  let database: BenchDatabase | undefined;
  let service: RunningService | undefined;
  const failures: string[] = [];
  const misses: string[] = [];
  try {
    database = await freshDatabase(join(tmp, 'db'));
    const secret = randomBytes(32).toString('hex');
    service = await startService({
      env: intakeServiceEnv(database.url, secret, { LOG_LEVEL: 'warn' }),
      stdoutFile: join(tmp, 'service.stdout.log'),
      stderrFile: join(tmp, 'service.stderr.log'),
    });
    const port = Number(new URL(service.origin).port);
    const runId = randomBytes(4).toString('hex');
    let index = 0;
    const next = () => signedAcmeEvent({ secret, runId, index: index++, nowSeconds: Math.floor(Date.now() / 1000) });

    const attack =
      floodProcesses > 0
        ? startFloodProcesses({ port, sockets: floodSockets, reconnectMs, processes: floodProcesses })
        : startReconnectFlood({ port, sockets: floodSockets, reconnectMs, addresses: floodAddresses });
    // The pool fills first: the genuine senders meet it full.
    await pause(floodProcesses > 0 ? 3000 : 1000);
    const openedBefore = await attack.opened();
    const floodStarted = performance.now();
    const endsAt = floodStarted + seconds * 1000;
    const fresh: Promise<boolean>[] = [];
    const freshSender = (async () => {
      while (performance.now() < endsAt) {
        fresh.push(deliver(port, next(), false));
        await pause(1000 / genuinePerSecond);
      }
    })();
    const keepAlive = Array.from({ length: keepAliveSenders }, async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const answers: boolean[] = [];
      try {
        while (performance.now() < endsAt) {
          answers.push(await deliver(port, next(), agent));
          await pause(keepAliveGapMs);
        }
      } finally {
        agent.destroy();
      }
      return answers;
    });
    await freshSender;
    const freshAnswers = await Promise.all(fresh);
    const keepAliveAnswers = (await Promise.all(keepAlive)).flat();
    const floodSeconds = (performance.now() - floodStarted) / 1000;
    const floodConnectionsPerSecond = ((await attack.opened()) - openedBefore) / floodSeconds;
    await attack.stop();

    const share = (answers: readonly boolean[]) => answers.filter(Boolean).length / Math.max(1, answers.length);
    const figures = {
      floodSockets,
      floodProcesses,
      floodAddresses,
      reconnectMs,
      seconds,
      floodConnectionsPerSecond: round(floodConnectionsPerSecond, 0),
      fresh: { sent: freshAnswers.length, answered200: freshAnswers.filter(Boolean).length },
      keepAlive: { sent: keepAliveAnswers.length, answered200: keepAliveAnswers.filter(Boolean).length },
      freshShare: round(share(freshAnswers), 3),
      keepAliveShare: round(share(keepAliveAnswers), 3),
    };
    const freshMet = figures.freshShare >= TARGET_SHARE;
    const keepAliveMet = figures.keepAliveShare >= TARGET_SHARE;
    if (!freshMet) misses.push(`fresh deliveries answered 200: ${figures.freshShare} < ${TARGET_SHARE}`);
    if (!keepAliveMet) misses.push(`keep-alive deliveries answered 200: ${figures.keepAliveShare} < ${TARGET_SHARE}`);
    if (freshAnswers.length === 0) failures.push('no genuine delivery was sent');
    console.log(
      `\n${formatTable(
        `${floodSockets} sockets from ${floodAddresses <= 1 ? FLOODING_ADDRESS : `${floodAddresses} addresses`} reconnecting ${reconnectMs} ms after each close, ${seconds} s`,
        [
          { label: 'flood connections/s', value: figures.floodConnectionsPerSecond },
          {
            label: 'fresh deliveries answered 200',
            value: `${figures.fresh.answered200} / ${figures.fresh.sent}`,
            note: `${targetMark(freshMet)} (95%)`,
          },
          {
            label: 'keep-alive deliveries answered 200',
            value: `${figures.keepAlive.answered200} / ${figures.keepAlive.sent}`,
            note: `${targetMark(keepAliveMet)} (95%)`,
          },
        ],
      )}\n`,
    );
    const file = writeResult('reconnect-flood', startedAt, {
      ...runContext(),
      ok: failures.length === 0,
      failures,
      misses,
      figures,
    });
    console.log(`written to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await service?.stop();
    await database?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
  return verdict(failures, misses);
}

exitWhenDone(main);
