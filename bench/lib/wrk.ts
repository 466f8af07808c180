// Signed intake load through wrk (a C load generator) when it is installed, as ../shared/bench's
// load-wrk.mjs does: every request is signed ahead of time and written to a file the wrk script
// reads, so the generator's own CPU stays small beside the service on a two-core machine. Without
// wrk, the same requests go through the bench's own generator (load.ts). A run either counts a
// fixed number of answers or runs until the caller stops it (a retention pass, say).
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { PreparedRequest } from './load.ts';
import { runLoad } from './load.ts';
import { percentile, round } from './stats.ts';

export type Loader = 'wrk' | 'node';

export interface IntakeRun {
  loader: Loader;
  /** Answers counted (a fixed run: exactly the number asked for). */
  answered: number;
  /** Answers by HTTP status (0: no answer). */
  statuses: Record<string, number>;
  /** wrk's socket errors (connect, read, write, timeout); the node generator's failed requests. */
  errors: number;
  elapsedMs: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The prepared requests ran out before the run was stopped: the tail of the window had no load. */
  exhausted: boolean;
}

export interface IntakeLoadOptions {
  origin: string;
  concurrency: number;
  /** Request `index` of the run, signed now. */
  request: (index: number) => PreparedRequest;
  /** Prepared requests: at least `count` plus a margin, so the last answers are of the same kind. */
  prepared: number;
  /** Stop after this many answers; undefined: run until `stop` aborts. */
  count?: number;
  stop?: AbortSignal;
  /** Called once the first answer is in: the load is on. */
  onStarted?: () => void;
  loader?: Loader;
}

let wrkInstalled: boolean | undefined;

export function wrkAvailable(): boolean {
  if (process.env.BENCH_LOADER === 'node') return false;
  if (wrkInstalled === undefined) {
    try {
      execFileSync('wrk', ['--version'], { stdio: 'ignore' });
      wrkInstalled = true;
    } catch (error) {
      // `wrk --version` prints its usage and exits 1: installed all the same.
      wrkInstalled = (error as { status?: number }).status === 1;
    }
  }
  return wrkInstalled;
}

export function intakeLoad(options: IntakeLoadOptions): Promise<IntakeRun> {
  const loader = options.loader ?? (wrkAvailable() ? 'wrk' : 'node');
  return loader === 'wrk' ? wrkLoad(options) : nodeLoad(options);
}

/**
 * The wrk script: requests separated by NUL, read once; answers counted by status; after `count`
 * answers one line with the elapsed time (the caller then interrupts wrk), and at the end (wrk's
 * `done`, also after an interrupt) the latency percentiles, errors and totals. The clock is
 * CLOCK_MONOTONIC through LuaJIT's ffi. Past the last prepared request a connection asks a path that
 * answers 404 (not counted), and the run reports itself exhausted. `done` runs on wrk's main Lua
 * state, not the thread's that counted, so an interrupted run's totals come from wrk's own summary
 * (requests answered, non-2xx among them, duration).
 */
function wrkScript(requestsFile: string, host: string, count: number): string {
  return `
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } timespec; int clock_gettime(int, timespec *); ]]
local ts = ffi.new("timespec")
local function now_us() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3 end
local reqs, n, i, got, t0, reported, checked, exhausted = {}, 0, 0, 0, nil, false, false, false
local count = ${count}
local codes = {}
local tail = "GET /__load_done__ HTTP/1.1\\r\\nHost: ${host}\\r\\n\\r\\n"
local function codes_json()
  local parts = {}
  for k, v in pairs(codes) do parts[#parts + 1] = '"' .. k .. '":' .. v end
  return '{' .. table.concat(parts, ",") .. '}'
end
function init(args)
  -- init runs on the thread's state only; the shape check runs request() on the main state
  checked = true
  local f = io.open("${requestsFile}", "rb"); local data = f:read("*a"); f:close()
  for r in string.gmatch(data, "([^%z]+)") do n = n + 1; reqs[n] = r end
end
function request()
  -- wrk's main state calls request() once before the run, only to check its shape (never sent)
  if not checked then checked = true; return tail end
  if t0 == nil then t0 = now_us() end
  i = i + 1
  if i > n then
    if not exhausted then exhausted = true; io.write('{"exhausted":1}\\n'); io.flush() end
    return tail
  end
  return reqs[i]
end
function response(status, headers, body)
  if status == 404 then return end
  got = got + 1
  if got == 1 then io.write('{"started":1}\\n'); io.flush() end
  codes[status] = (codes[status] or 0) + 1
  if count > 0 and got >= count and not reported then
    reported = true
    io.write('{"counted_us":' .. string.format("%.0f", now_us() - t0) .. ',"codes":' .. codes_json() .. '}\\n')
    io.flush()
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write('{"p50_us":' .. latency:percentile(50) .. ',"p99_us":' .. latency:percentile(99) ..
    ',"max_us":' .. latency.max .. ',"requests":' .. summary.requests .. ',"non_2xx":' .. e.status ..
    ',"duration_us":' .. summary.duration .. ',"errors":' .. (e.connect + e.read + e.write + e.timeout) .. '}\\n')
end
`;
}

interface WrkCounted {
  counted_us: number;
  codes: Record<string, number>;
}
interface WrkDone {
  p50_us: number;
  p99_us: number;
  max_us: number;
  requests: number;
  non_2xx: number;
  duration_us: number;
  errors: number;
}

function wireRequest(host: string, request: PreparedRequest): Buffer {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return Buffer.concat([
    Buffer.from(
      `POST ${request.path} HTTP/1.1\r\nHost: ${host}\r\n${headers}Content-Length: ${request.body.length}\r\n\r\n`,
    ),
    request.body,
  ]);
}

async function wrkLoad(options: IntakeLoadOptions): Promise<IntakeRun> {
  const url = new URL(options.origin);
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const requestsFile = join(dir, 'requests');
    // Written a slice at a time: a retention pass's load is a million requests or so.
    const file = openSync(requestsFile, 'w');
    try {
      const separator = Buffer.from([0]);
      for (let first = 0; first < options.prepared; first += 10_000) {
        const parts: Buffer[] = [];
        for (let index = first; index < Math.min(first + 10_000, options.prepared); index++) {
          if (index > 0) parts.push(separator);
          parts.push(wireRequest(url.host, options.request(index)));
        }
        writeSync(file, Buffer.concat(parts));
      }
    } finally {
      closeSync(file);
    }
    const script = join(dir, 'load.lua');
    writeFileSync(script, wrkScript(requestsFile, url.host, options.count ?? 0));
    const child = spawn(
      'wrk',
      ['-t1', `-c${options.concurrency}`, '-d600s', '--timeout', '30s', '-s', script, url.origin],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    let interrupted = false;
    let started = false;
    const interrupt = () => {
      if (interrupted) return;
      interrupted = true;
      child.kill('SIGINT');
    };
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!started && out.includes('"started"')) {
        started = true;
        options.onStarted?.();
      }
      if (out.includes('"counted_us"')) interrupt();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    if (options.stop?.aborted) interrupt();
    options.stop?.addEventListener('abort', interrupt, { once: true });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    options.stop?.removeEventListener('abort', interrupt);
    const lines = out.split('\n').filter((line) => line.startsWith('{'));
    const doneLine = lines.find((line) => line.includes('"p99_us"'));
    if (doneLine === undefined) throw new Error(`wrk gave no result (exit ${code}): ${err.slice(-500)}`);
    const done = JSON.parse(doneLine) as WrkDone;
    const countedLine = lines.find((line) => line.includes('"counted_us"'));
    const counted = countedLine === undefined ? undefined : (JSON.parse(countedLine) as WrkCounted);
    if (options.count !== undefined && counted === undefined) {
      throw new Error(`wrk stopped after ${done.requests} answers of ${options.count}: ${err.slice(-500)}`);
    }
    const exhausted = out.includes('"exhausted"');
    // Interrupted: every answer wrk saw (past the prepared requests, 404s that count as non-2xx too).
    const answered = counted === undefined ? done.requests : (options.count ?? done.requests);
    const statuses = counted?.codes ?? { '2xx': done.requests - done.non_2xx, 'non-2xx': done.non_2xx };
    const elapsedMs = (counted?.counted_us ?? done.duration_us) / 1000;
    return {
      loader: 'wrk',
      answered,
      statuses,
      errors: done.errors,
      elapsedMs: round(elapsedMs, 1),
      eventsPerSecond: round(answered / (elapsedMs / 1000), 1),
      p50Ms: round(done.p50_us / 1000),
      p99Ms: round(done.p99_us / 1000),
      maxMs: round(done.max_us / 1000),
      exhausted,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function nodeLoad(options: IntakeLoadOptions): Promise<IntakeRun> {
  const total = options.count ?? options.prepared;
  const requests = Array.from({ length: total }, (_, index) => options.request(index));
  const pool = new Pool(options.origin, { connections: options.concurrency, pipelining: 1 });
  try {
    let started = false;
    const onAnswer = () => {
      if (started) return;
      started = true;
      options.onStarted?.();
    };
    const load = await runLoad({ pool, requests, concurrency: options.concurrency, signal: options.stop, onAnswer });
    const statuses: Record<string, number> = { 200: load.accepted };
    for (const rejection of load.rejections) {
      statuses[rejection.status] = (statuses[rejection.status] ?? 0) + 1;
    }
    return {
      loader: 'node',
      answered: load.sent,
      statuses,
      errors: statuses[0] ?? 0,
      elapsedMs: round(load.elapsedMs, 1),
      eventsPerSecond: round(load.sent / (load.elapsedMs / 1000), 1),
      p50Ms: round(percentile(load.latenciesMs, 50)),
      p99Ms: round(percentile(load.latenciesMs, 99)),
      maxMs: round(percentile(load.latenciesMs, 100)),
      exhausted: options.count === undefined && load.sent === requests.length,
    };
  } finally {
    await pool.close();
  }
}
