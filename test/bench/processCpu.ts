import { readFileSync } from 'node:fs';

// CPU spent while a benchmark drives a path: by this process (the client and the upstream), and,
// where the path goes through a proxy in a process of its own, by that process and its main thread.

/** CPU time (user + system) in ms of a process, or of one of its threads, from /proc in clock ticks (100 a second). */
export function cpuMs(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU spent in ms: by this process (client and upstream), by a proxy's process and by its main thread. */
export interface CpuSpent {
  bench: number;
  proxy: number;
  main: number;
}

export const noCpuSpent = (): CpuSpent => ({ bench: 0, proxy: 0, main: 0 });

/** `spent` shared out over `units` (requests, transfers, rounds), in `scale` parts of a ms (1000 for us). */
export function cpuPer(spent: CpuSpent, units: number, scale: number): CpuSpent {
  return { bench: (spent.bench * scale) / units, proxy: (spent.proxy * scale) / units, main: (spent.main * scale) / units };
}

/** Starts counting; the returned function adds what was spent since to `into`. `proxyPid`: the proxy's process, none for direct. */
export function cpuFrom(proxyPid: number | undefined): (into: CpuSpent) => void {
  const bench0 = process.cpuUsage();
  const proxy0 = proxyPid ? cpuMs(proxyPid) : 0;
  const main0 = proxyPid ? cpuMs(proxyPid, proxyPid) : 0;
  return (into) => {
    const bench = process.cpuUsage(bench0);
    into.bench += (bench.user + bench.system) / 1000;
    if (!proxyPid) return;
    into.proxy += cpuMs(proxyPid) - proxy0;
    into.main += cpuMs(proxyPid, proxyPid) - main0;
  };
}
