// An HTTP target that rate-limits, for bench:rate-limited, in a child process of its own so its
// timing is not the relay's: node:http on 127.0.0.1 taking `rate` requests a second and answering
// the rest 429 with a whole-second `Retry-After` (what most APIs send), as one of two common
// limiters:
// - `window`: a fixed one-second window, `rate` requests per wall-clock second, Retry-After the
//   seconds until the window ends, rounded up (so always 1);
// - `bucket`: a token bucket holding one second's worth, refilled continuously, Retry-After the
//   seconds until the next token, rounded up (so always 1).
// It keeps the time of every request it took and counts its 429s.
import { type ChildProcess, spawn } from 'node:child_process';

export type LimiterKind = 'window' | 'bucket';

const TARGET_SOURCE = `
const http = require('node:http');
const rate = Number(process.env.TARGET_RATE);
const kind = process.env.TARGET_KIND;
const accepted = [];
let refused = 0;
let windowSecond = 0;
let windowCount = 0;
let tokens = rate;
let filledAt = performance.now();
function take(nowMs) {
  if (kind === 'window') {
    const second = Math.floor(nowMs / 1000);
    if (second !== windowSecond) { windowSecond = second; windowCount = 0; }
    if (windowCount < rate) { windowCount += 1; return 0; }
    return Math.ceil((1000 - (nowMs % 1000)) / 1000);
  }
  const now = performance.now();
  tokens = Math.min(rate, tokens + ((now - filledAt) / 1000) * rate);
  filledAt = now;
  if (tokens >= 1) { tokens -= 1; return 0; }
  return Math.ceil((1 - tokens) / rate);
}
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const nowMs = Date.now();
    const wait = take(nowMs);
    if (wait === 0) {
      accepted.push(nowMs);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
      res.end('{}');
      return;
    }
    refused += 1;
    res.writeHead(429, { 'retry-after': String(wait), 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', () => process.send({ accepted, refused }));
process.on('disconnect', () => process.exit(0));
`;

export interface TargetCounts {
  /** When each request it took arrived (epoch ms). */
  accepted: number[];
  /** Requests answered 429. */
  refused: number;
}

export interface RateLimitedTarget {
  url: string;
  counts(): Promise<TargetCounts>;
  stop(): Promise<void>;
}

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    // Asked many times a run: each answer takes its listeners away again.
    const onExit = (code: number | null) => reject(new Error(`the rate-limited target exited (code ${code})`));
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as T);
    });
    child.once('exit', onExit);
  });
}

export async function startRateLimitedTarget(rate: number, kind: LimiterKind): Promise<RateLimitedTarget> {
  const child = spawn(process.execPath, ['-e', TARGET_SOURCE], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, TARGET_RATE: String(rate), TARGET_KIND: kind },
  });
  const { port } = await nextMessage<{ port: number }>(child);
  return {
    url: `http://127.0.0.1:${port}/outbox`,
    counts: async () => {
      const answer = nextMessage<TargetCounts>(child);
      child.send('counts');
      return answer;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}
