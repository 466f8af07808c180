// `npm run bench:verify`: verifications per second of each scheme's verify() (signature check,
// JSON parse, envelope validation and, for GitHub/Shopify, the body digest) on a 2 KiB body, with
// keys imported once, as the service does. Deliveries are signed ahead of time with node:crypto,
// not the service's code. Prints figures per CPU second (one core's capacity) and per wall-clock
// second; a scheme signed with a shared secret under 20,000 per CPU second is MISSED (fails the run
// only with BENCH_STRICT=1). Environment: BENCH_VERIFY_MS (2000 measured per scheme and in-flight
// count), BENCH_VERIFY_WARMUP_MS (300).
import { availableParallelism } from 'node:os';
import { allSenders } from '../src/senders/registry.ts';
import type { VerificationTime } from '../src/senders/types.ts';
import { intFromEnv } from './lib/env.ts';
import { runContext, writeResult } from './lib/results.ts';
import { formatTable, round } from './lib/stats.ts';
import { verdict } from './lib/targets.ts';
import { BODY_BYTES, verifyDelivery, verifySchemes } from './lib/verify-schemes.ts';

const TARGET_PER_SECOND = 20_000;
const WARMUP_MS = intFromEnv('BENCH_VERIFY_WARMUP_MS', 300, 0);
const MEASURE_MS = intFromEnv('BENCH_VERIFY_MS', 2000, 1);
const IN_FLIGHT = [1, 16] as const;

const nowSeconds = Math.floor(Date.now() / 1000);
const time: VerificationTime = { nowSeconds, toleranceSeconds: 300 };
const schemes = verifySchemes(nowSeconds);

interface Rate {
  /** Calls completed per second of wall-clock time. */
  perSecond: number;
  /**
   * Calls completed per second of CPU time used by this process, every thread included (Web Crypto
   * runs on libuv's pool): what one fully busy core would do. Steadier than wall-clock time on a
   * machine shared with other work.
   */
  perCpuSecond: number;
}

/** Runs `verify` with `inFlight` calls outstanding for `durationMs`. */
async function rate(verify: () => Promise<void>, inFlight: number, durationMs: number): Promise<Rate> {
  let completed = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + durationMs;
  const lane = async () => {
    while (performance.now() < deadline) {
      await verify();
      completed += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const wallSeconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { perSecond: round(completed / wallSeconds, 0), perCpuSecond: round(completed / cpuSeconds, 0) };
}

const startedAt = new Date();
/**
 * The target is for schemes signed with a shared secret (an HMAC); a sender that signs with a
 * private key (Ed25519, ECDSA) costs a public-key verification, several times dearer, and has none.
 */
type Signature = 'shared secret' | 'public key';
const results: Array<{ scheme: string; inFlight: number; signature: Signature } & Rate> = [];
// The original six schemes, compared across releases, and two asymmetric ones; the other senders
// run the same engine.
for (const provider of allSenders.filter((candidate) => Object.hasOwn(schemes, candidate.name))) {
  const scheme = schemes[provider.name];
  if (scheme === undefined) continue;
  const keys = scheme.publicKey
    ? await provider.importKeys([], [scheme.secret])
    : await provider.importKeys([scheme.secret]);
  const delivery = verifyDelivery(scheme);
  const verify = async () => {
    const outcome = await provider.verify(delivery, keys, time);
    // A batch sender's delivery verifies as a batch of events.
    if (outcome.outcome !== 'verified' && outcome.outcome !== 'verified_batch') {
      throw new Error(`${provider.name}: ${outcome.outcome}, not verified`);
    }
  };
  for (const inFlight of IN_FLIGHT) {
    await rate(verify, inFlight, WARMUP_MS);
    const signature: Signature = scheme.publicKey ? 'public key' : 'shared secret';
    results.push({ scheme: provider.name, inFlight, signature, ...(await rate(verify, inFlight, MEASURE_MS)) });
  }
}

const cores = availableParallelism();
console.log(
  formatTable(
    `verify() per CPU second, ${BODY_BYTES}-byte body, keys imported once (${cores} core${cores === 1 ? '' : 's'} available)`,
    results.map((result) => ({
      label: `${result.scheme.padEnd(8)} ${result.inFlight === 1 ? 'one at a time' : `${result.inFlight} in flight`}`,
      value: result.perCpuSecond,
      note:
        `wall clock ${result.perSecond}/s` +
        (result.signature === 'public key'
          ? ', public key (no target)'
          : result.perCpuSecond >= TARGET_PER_SECOND
            ? ''
            : `, MISSED (target >= ${TARGET_PER_SECOND})`),
    })),
  ),
);
if (cores > 1) console.log(`\nFor wall-clock figures on one core, run \`taskset -c 0 npm run bench:verify\`.`);
const file = writeResult('verify', startedAt, { ...runContext(), cores, bodyBytes: BODY_BYTES, results });
console.log(`\nresults: ${file}`);
const misses = results
  .filter((result) => result.signature === 'shared secret' && result.perCpuSecond < TARGET_PER_SECOND)
  .map((result) => `${result.scheme}, ${result.inFlight} in flight: ${result.perCpuSecond} per CPU second`);
if (!verdict([], misses)) process.exitCode = 1;
