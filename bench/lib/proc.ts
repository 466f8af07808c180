// Linux /proc readers for benchmarks: CPU time and peak memory of a process (or a process tree), and
// whole-machine CPU use, so a run can say where its cores went. Linux only, by design.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let cachedClockTicks: number | undefined;

/** Kernel clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
export function clockTicksPerSecond(): number {
  if (cachedClockTicks === undefined) {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (!Number.isInteger(ticks) || ticks <= 0) throw new Error(`getconf CLK_TCK answered ${ticks}`);
    cachedClockTicks = ticks;
  }
  return cachedClockTicks;
}

export function ticksToMs(ticks: number): number {
  return (ticks * 1000) / clockTicksPerSecond();
}

interface ProcStat {
  ppid: number;
  /** Process group id. */
  pgrp: number;
  utime: number;
  stime: number;
  /** CPU of children that exited and were waited for. */
  cutime: number;
  cstime: number;
}

function readStat(pid: number, path = `/proc/${pid}/stat`): ProcStat {
  const text = readFileSync(path, 'utf8');
  // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state) of proc(5).
  const field = (n: number) => Number(fields[n - 3]);
  return { ppid: field(4), pgrp: field(5), utime: field(14), stime: field(15), cutime: field(16), cstime: field(17) };
}

/**
 * CPU ticks of this process's children that have exited and been waited for, their own children
 * included: read around a child's exit, what a whole child process tree cost.
 */
export function reapedChildrenCpuTicks(): number {
  const stat = readStat(process.pid);
  return stat.cutime + stat.cstime;
}

export interface CpuTicks {
  user: number;
  system: number;
}

/** utime and stime of one process, in clock ticks (all its threads). */
export function processCpuTicks(pid: number): CpuTicks {
  const stat = readStat(pid);
  return { user: stat.utime, system: stat.stime };
}

/**
 * utime and stime of a process's main thread alone: for Node, the event loop, whose saturation
 * caps throughput however idle the other cores are.
 */
export function mainThreadCpuTicks(pid: number): CpuTicks {
  const stat = readStat(pid, `/proc/${pid}/task/${pid}/stat`);
  return { user: stat.utime, system: stat.stime };
}

/**
 * Nanoseconds a thread has run on a CPU and waited runnable for one (/proc/<pid>/task/<tid>/schedstat):
 * on a machine with few cores, the waiting is what a busy neighbour costs the service.
 */
export function threadSchedule(pid: number, tid = pid): { runNs: number; waitNs: number } {
  const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/);
  return { runNs: Number(run), waitNs: Number(wait) };
}

/**
 * utime + stime of every live process for which `counts` holds, read from /proc; a process that ends
 * between the listing and the read is skipped.
 */
function liveCpuTicks(counts: (pid: number, stat: ProcStat) => boolean): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const pid = Number(entry);
      const stat = readStat(pid);
      if (counts(pid, stat)) total += stat.utime + stat.stime;
    } catch {
      // The process ended between readdir and read.
    }
  }
  return total;
}

/**
 * CPU ticks of a parent and its direct children, including children already reaped: a server such as
 * PostgreSQL forks a process per connection, and a backend that exits mid-run must still count.
 */
export function processTreeCpuTicks(parentPid: number): number {
  const parent = readStat(parentPid);
  return (
    parent.utime + parent.stime + parent.cutime + parent.cstime + liveCpuTicks((_, stat) => stat.ppid === parentPid)
  );
}

/**
 * CPU ticks of every live process in a process group: a server started through `npm start` (npm, a
 * shell, node), each measured whatever the depth of its tree.
 */
export function processGroupCpuTicks(pgid: number): number {
  return liveCpuTicks((_, stat) => stat.pgrp === pgid);
}

/**
 * CPU ticks of every process whose command name (/proc/<pid>/comm) is `command`: a broker that runs
 * on this machine (beam.smp, nats-server, redis-server), whoever started it.
 */
export function commandCpuTicks(command: string): number {
  return liveCpuTicks((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === command);
}

/**
 * CPU ticks of each listed process still alive (a process that has ended counts nothing): the
 * backends of one database, say, read before and after a load.
 */
export function pidsCpuTicks(pids: Iterable<number>): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    try {
      const stat = readStat(pid);
      ticks.set(pid, stat.utime + stat.stime);
    } catch {
      // Ended: its last ticks cannot be read any more.
    }
  }
  return ticks;
}

/** VmHWM (peak resident set size) in KiB. */
export function peakRssKiB(pid: number): number {
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match?.[1] === undefined) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(match[1]);
}

export interface MachineCpu {
  busy: number;
  /**
   * What processes ran (user, nice, system), without the kernel's interrupt work (irq, softirq),
   * which on loopback is largely the benchmark's own traffic and counts in no process's time.
   */
  processes: number;
  total: number;
}

/** Aggregate CPU counters of the machine (first line of /proc/stat), in clock ticks. */
export function machineCpu(): MachineCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [, ...values] = line.trim().split(/\s+/);
  const ticks = values.map(Number);
  const total = ticks.reduce((sum, value) => sum + value, 0);
  // idle + iowait are the not-busy columns; guest time is already inside user.
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  const guest = (ticks[8] ?? 0) + (ticks[9] ?? 0);
  const processes = (ticks[0] ?? 0) + (ticks[1] ?? 0) + (ticks[2] ?? 0) - guest;
  return { busy: total - guest - idle, processes, total: total - guest };
}

/** Share of all cores busy between two readings, 0..1. */
export function machineBusyShare(before: MachineCpu, after: MachineCpu): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : 0;
}

export interface CpuSpent {
  serviceMs: number;
  /** Undefined when PostgreSQL runs elsewhere (BENCH_DATABASE_URL). */
  postgresMs: number | undefined;
  machineBusyShare: number;
}

/** Starts measuring the CPU a service and a local PostgreSQL spend; the answer stops it. */
export function startCpuMeter(servicePid: number, postmasterPid: number | undefined): () => CpuSpent {
  const serviceTicks = () => {
    const ticks = processCpuTicks(servicePid);
    return ticks.user + ticks.system;
  };
  const serviceBefore = serviceTicks();
  const postgresBefore = postmasterPid === undefined ? undefined : processTreeCpuTicks(postmasterPid);
  const machineBefore = machineCpu();
  return () => ({
    serviceMs: ticksToMs(serviceTicks() - serviceBefore),
    postgresMs:
      postmasterPid === undefined || postgresBefore === undefined
        ? undefined
        : ticksToMs(processTreeCpuTicks(postmasterPid) - postgresBefore),
    machineBusyShare: machineBusyShare(machineBefore, machineCpu()),
  });
}

/**
 * Nanoseconds each thread of a process has run, summed by thread name (/proc/<pid>/task/<tid>/comm:
 * `node` for the event loop, `libuv-worker` for the pool Web Crypto runs on, `V8 DefaultWorke` for
 * GC and compiler helpers): nanosecond resolution, where utime/stime count 10 ms ticks.
 */
export function runNsByThreadName(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const { runNs } = threadSchedule(pid, Number(tid));
      byName.set(name, (byName.get(name) ?? 0) + runNs);
    } catch {
      // The thread ended between readdir and read.
    }
  }
  return byName;
}

/** Nanoseconds each of `pids` has run (one thread each: PostgreSQL backends); a pid gone reads 0. */
export function runNsOf(pids: Iterable<number>): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const pid of pids) {
    try {
      byPid.set(pid, threadSchedule(pid).runNs);
    } catch {
      byPid.set(pid, 0);
    }
  }
  return byPid;
}
