// Reads a V8 .cpuprofile (node --cpu-prof) into self and inclusive time per function and self time
// per package or file, so a benchmark's hotspots can be named without opening a profiler UI.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Hotspot {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Sampled time minus V8's (idle) pseudo-frame: the base of every share below. */
  busyMs: number;
  selfByFunction: Hotspot[];
  inclusiveByFunction: Hotspot[];
  selfByModule: Hotspot[];
  /** Time with at least one frame of the package/file on the stack (callees in other packages included). */
  inclusiveByModule: Hotspot[];
}

function shortLocation(url: string, root: string): string {
  if (url === '') return '';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  return path.startsWith('/') ? relative(root, path) : path;
}

/** A package name for node_modules files, else the repository path, else V8's pseudo-frames. */
function moduleOf(frame: CallFrame, root: string): string {
  const location = shortLocation(frame.url, root);
  if (location === '') return `(${frame.functionName.replace(/^\(|\)$/g, '') || 'native'})`;
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(location);
  if (match?.[1]) return match[1];
  if (location.startsWith('node:')) return 'node: internals';
  return location;
}

function frameName(frame: CallFrame, root: string): string {
  const location = shortLocation(frame.url, root);
  const name = frame.functionName || '(anonymous)';
  return location === '' ? name : `${name}  ${location}:${frame.lineNumber + 1}`;
}

function ranked(totals: Map<string, number>, totalMs: number, limit: number): Hotspot[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, ms]) => ({ name, ms: Math.round(ms), share: totalMs > 0 ? ms / totalMs : 0 }));
}

/** Sampled µs from `fromUs` to `toUs` (CLOCK_MONOTONIC µs, as V8's profile timestamps and process.hrtime). */
export interface SampleWindow {
  fromUs: number;
  toUs: number;
}

/**
 * A profile's nodes by id, each node's parent, and the sampled time (µs) of each node as the leaf
 * (only of samples inside `window` when one is given).
 */
function readProfile(file: string, window?: SampleWindow) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  // A sample's time is the delta to the next sample (V8's own convention in DevTools).
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (window !== undefined && (at < window.fromUs || at > window.toUs)) continue;
    const id = profile.samples[i] as number;
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }
  return { nodes, parents, selfUs };
}

/**
 * Busy time (ms, idle excluded) split into buckets: each sample goes to the bucket `classify` names
 * for the first frame it recognises walking from the leaf towards the root, else to `fallback(leaf)`.
 */
export function attributeCpuProfile(
  file: string,
  classify: (frame: CallFrame) => string | undefined,
  fallback: (leaf: CallFrame) => string,
  window?: SampleWindow,
): { busyMs: number; byBucket: Map<string, number> } {
  const { nodes, parents, selfUs } = readProfile(file, window);
  const byBucket = new Map<string, number>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const leaf = nodes.get(id)?.callFrame;
    if (leaf === undefined || leaf.functionName === '(idle)') continue;
    let bucket: string | undefined;
    for (let at: number | undefined = id; at !== undefined && bucket === undefined; at = parents.get(at)) {
      const frame = nodes.get(at)?.callFrame;
      if (frame !== undefined) bucket = classify(frame);
    }
    bucket ??= fallback(leaf);
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + us / 1000);
    busyUs += us;
  }
  return { busyMs: busyUs / 1000, byBucket };
}

export function summarizeCpuProfile(file: string, root: string, limit = 25): ProfileSummary {
  const { nodes, parents, selfUs } = readProfile(file);

  const selfByFunction = new Map<string, number>();
  const selfByModule = new Map<string, number>();
  const inclusiveByFunction = new Map<string, number>();
  const inclusiveByModule = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const node = nodes.get(id);
    if (node === undefined) continue;
    const ms = us / 1000;
    totalUs += us;
    const name = frameName(node.callFrame, root);
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + ms);
    const module = moduleOf(node.callFrame, root);
    selfByModule.set(module, (selfByModule.get(module) ?? 0) + ms);
    // Each function on the stack counts once per sample, however often it recurses.
    const seen = new Set<string>();
    const seenModules = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const frame = nodes.get(at)?.callFrame;
      if (frame === undefined || frame.functionName === '(root)') continue;
      const frameModule = moduleOf(frame, root);
      if (!seenModules.has(frameModule)) {
        seenModules.add(frameModule);
        inclusiveByModule.set(frameModule, (inclusiveByModule.get(frameModule) ?? 0) + ms);
      }
      const key = frameName(frame, root);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusiveByFunction.set(key, (inclusiveByFunction.get(key) ?? 0) + ms);
    }
  }
  const totalMs = totalUs / 1000;
  // Idle is time the thread waited; shares of busy time say where the thread's work went.
  const idleMs = selfByFunction.get('(idle)') ?? 0;
  for (const totals of [selfByFunction, selfByModule, inclusiveByFunction, inclusiveByModule]) totals.delete('(idle)');
  const busyMs = totalMs - idleMs;
  return {
    totalMs,
    busyMs,
    selfByFunction: ranked(selfByFunction, busyMs, limit),
    inclusiveByFunction: ranked(inclusiveByFunction, busyMs, limit),
    selfByModule: ranked(selfByModule, busyMs, limit),
    inclusiveByModule: ranked(inclusiveByModule, busyMs, limit),
  };
}
