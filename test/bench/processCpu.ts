import { readdirSync, readFileSync } from 'node:fs';

// CPU spent while a benchmark drives a path: by this process (the client and the upstream), and,
// where the path goes through a proxy in a process of its own, by that process and its main thread.

/** CPU time (user + system) in ms of a process, or of one of its threads, from /proc in clock ticks (100 a second). */
export function cpuMs(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time in ms one thread has run, from its schedstat in ns: a thread's ticks in stat count 10 ms steps, too coarse for one burst's writer. */
function threadMs(pid: number, thread: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return 0;
  }
}

/** The name the session writer gives its thread (writerWorker.ts), so its CPU is told apart from the proxy's main thread. */
const WRITER_THREAD = 'capsem-writer';

/** A process's threads with their names (a thread that ended meanwhile is left out). */
function namedThreads(pid: number): { tid: number; name: string }[] {
  const threads: { tid: number; name: string }[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      threads.push({ tid: Number(task), name: readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim() });
    } catch {
      continue;
    }
  }
  return threads;
}

/** The thread ids of a process's session writers. */
const writerThreads = (pid: number): number[] => namedThreads(pid).flatMap((t) => (t.name === WRITER_THREAD ? [t.tid] : []));

/** CPU time in ms of a process's session writer threads, 0 where it has none. */
function writerMs(pid: number): number {
  return writerThreads(pid).reduce((ms, tid) => ms + threadMs(pid, tid), 0);
}

/** How long a session writer must have done nothing (no CPU, no wait on the disk) to be taken as done: more than its idle checkpoint's wait (writerWorker.ts). */
const WRITER_QUIET_MS = 200;

/**
 * Resolves once a proxy's session writer has been quiet for WRITER_QUIET_MS (at most 5 s): a round's
 * commits, and the checkpoint the writer runs once idle, are that round's work, and must not fall
 * on the next path's measure. At once where the process has no writer.
 */
export async function writerQuiet(pid: number): Promise<void> {
  const writers = writerThreads(pid).map(String);
  if (writers.length === 0) return;
  const busy = (task: string): string => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      // The state letter (S sleeping; R running and D waiting on the disk are busy) and the CPU run so far.
      return `${stat.slice(stat.lastIndexOf(') ') + 2, stat.lastIndexOf(') ') + 3)}${threadMs(pid, Number(task))}`;
    } catch {
      return 'gone';
    }
  };
  const deadline = performance.now() + 5000;
  let last = writers.map(busy).join();
  let quietSince = performance.now();
  while (performance.now() < deadline && performance.now() - quietSince < WRITER_QUIET_MS) {
    await new Promise((r) => setTimeout(r, 20));
    const now = writers.map(busy).join();
    if (now !== last || !now.split(',').every((s) => s.startsWith('S'))) quietSince = performance.now();
    last = now;
  }
}

/** CPU spent in ms: by this process (client and upstream), by a proxy's process, its main thread and its session writer thread. */
export interface CpuSpent {
  bench: number;
  proxy: number;
  main: number;
  writer: number;
}

export const noCpuSpent = (): CpuSpent => ({ bench: 0, proxy: 0, main: 0, writer: 0 });

/** `spent` shared out over `units` (requests, transfers, rounds), in `scale` parts of a ms (1000 for us). */
export function cpuPer(spent: CpuSpent, units: number, scale: number): CpuSpent {
  const per = (ms: number): number => (ms * scale) / units;
  return { bench: per(spent.bench), proxy: per(spent.proxy), main: per(spent.main), writer: per(spent.writer) };
}

/** Starts counting; the returned function adds what was spent since to `into`. `proxyPid`: the proxy's process, none for direct. */
export function cpuFrom(proxyPid: number | undefined): (into: CpuSpent) => void {
  const bench0 = process.cpuUsage();
  const proxy0 = proxyPid ? cpuMs(proxyPid) : 0;
  const main0 = proxyPid ? threadMs(proxyPid, proxyPid) : 0;
  const writer0 = proxyPid ? writerMs(proxyPid) : 0;
  return (into) => {
    const bench = process.cpuUsage(bench0);
    into.bench += (bench.user + bench.system) / 1000;
    if (!proxyPid) return;
    into.proxy += cpuMs(proxyPid) - proxy0;
    into.main += threadMs(proxyPid, proxyPid) - main0;
    into.writer += writerMs(proxyPid) - writer0;
  };
}

/** CPU time in ms of every thread of a process, summed by the thread's name (V8's GC helpers, libuv's pool, the writer...). */
export function threadsByName(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const { tid, name } of namedThreads(pid)) {
    const group = tid === pid ? 'main' : name;
    byName.set(group, (byName.get(group) ?? 0) + threadMs(pid, tid));
  }
  return byName;
}

/** What each named group of a process's threads spent between two threadsByName readings, largest first. */
export function threadsSpent(before: Map<string, number>, after: Map<string, number>): [string, number][] {
  return [...after].map(([name, ms]): [string, number] => [name, ms - (before.get(name) ?? 0)]).sort((a, b) => b[1] - a[1]);
}

/** A path a benchmark drives: `pid` is its proxy's process, none for direct. */
export interface DrivenPath {
  readonly pid?: number;
}

export interface InterleavedRounds {
  /** Each path's measure in each round, in round order. */
  readonly values: number[][];
  /** What each path spent over its timed rounds. */
  readonly cpu: CpuSpent[];
}

/**
 * Measures every path once a round, the paths interleaved so that the machine's drift over seconds
 * falls on all of them alike, and counts the CPU each path spends around its own measures.
 * `warmups` untimed measures per path come first, while each path's code compiles; `alternate`
 * reverses the order every other round, so no path always runs on the warmer machine.
 */
export async function interleavedRounds<P extends DrivenPath>(
  paths: readonly P[],
  rounds: number,
  measure: (path: P) => Promise<number>,
  options: { readonly warmups?: number; readonly alternate?: boolean } = {},
): Promise<InterleavedRounds> {
  for (const path of paths) for (let i = 0; i < (options.warmups ?? 1); i++) await measure(path);
  const values: number[][] = paths.map(() => []);
  const cpu = paths.map(noCpuSpent);
  for (let round = 0; round < rounds; round++) {
    const order = [...paths.keys()];
    if (options.alternate && round % 2 === 1) order.reverse();
    for (const i of order) {
      const spent = cpuFrom(paths[i]!.pid);
      values[i]!.push(await measure(paths[i]!));
      spent(cpu[i]!);
    }
  }
  return { values, cpu };
}
