import { readdirSync, readFileSync } from 'node:fs';
import type { MuxCounters } from '../../electron/vm/mux.ts';

// Where a transfer into the guest spends its time, hop by hop (upstream → proxy → mux → QEMU →
// agent → guest TCP → curl): the CPU of each host thread on the way, read from schedstat at the
// transfer's start and end on the host's clock, the mux's own counters, and the guest's own split
// of its CPU (agent, curl, the rest) laid over what its vCPU threads used on the host: the guest's
// clock drifts under TCG load, its shares do not. Each hop is printed per 64 KiB and as a share of
// the wall time, so the one that bounds the transfer is named by a figure: a single thread near
// 100% of the wall is the limit; vCPUs that wait for a host core more than any thread works put it
// in the host's load; a host that waits for the guest's window most of the time puts it in the guest.

const BLOCK = 64 << 10;

/** A process whose threads are counted, and what it is on the path. */
export interface HopProcess {
  readonly role: 'bench' | 'upstream' | 'qemu';
  readonly pid: number;
}

/** The host at one moment: CPU ns of each thread by hop and its ns runnable but waiting for a core, and the mux's counters. */
export interface HostSample {
  readonly at: number;
  readonly threads: ReadonlyMap<string, { readonly hop: string; readonly ns: number; readonly waitNs: number }>;
  readonly mux: Readonly<MuxCounters>;
}

/** The hop a host thread works for, by its process and name (QEMU names its threads with debug-threads=on). */
function hopOf(role: HopProcess['role'], pid: number, tid: number, name: string): string {
  if (role === 'upstream') return 'upstream (its process)';
  if (role === 'bench') return tid === pid ? 'host main thread: proxy + mux' : 'host bench, other threads';
  const vcpu = /^CPU (\d+)\/(TCG|KVM)$/.exec(name);
  if (vcpu) return `QEMU vCPU ${vcpu[1]} (the guest's work)`;
  return tid === pid ? 'QEMU main loop: agent socket ↔ virtio-serial' : 'QEMU other threads';
}

export function sampleHost(processes: readonly HopProcess[], mux: Readonly<MuxCounters>): HostSample {
  const threads = new Map<string, { hop: string; ns: number; waitNs: number }>();
  for (const { role, pid } of processes) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const [ns, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        threads.set(`${pid}/${tid}`, { hop: hopOf(role, pid, Number(tid), name), ns: ns!, waitNs: waitNs! });
      } catch {
        // The thread ended between the listing and the read: its time is lost, as any thread's that ends mid-transfer.
      }
    }
  }
  return { at: performance.now(), threads, mux: { ...mux } };
}

/** What the guest reports for the same transfer, in CPU seconds by its own clock. */
export interface GuestWork {
  readonly agentCpu: number;
  readonly agentReads: number;
  /** curl's CPU for the transfer alone (its start taken off); none where no curl ran. */
  readonly curlCpu?: number;
  /** The whole guest's busy CPU over the same time. */
  readonly guestBusy: number;
}

/** One transfer's hops: ms of each, its wall time on the host's clock, and the mux's work. */
export interface HopWindow {
  readonly wallMs: number;
  readonly bytes: number;
  readonly hops: ReadonlyMap<string, number>;
  /** ms each vCPU was runnable but waiting for a host core, by vCPU. */
  readonly vcpuWaitMs: readonly number[];
  /** CPU ms of every host thread counted: what the path costs the host's cores. */
  readonly hostCpuMs: number;
  readonly framesOut: number;
  readonly creditWaitMs: number;
  readonly agentReads: number;
}

const GUEST_AGENT = 'guest agent: port → guest TCP (or a pipe)';
const GUEST_CURL = 'guest curl: guest TCP → /dev/null';
const GUEST_REST = 'guest kernel and the rest';
const HOST_CORES = 'host cores: a vCPU runnable, waiting for one';
const MUX_SEND = '  of it, mux: frame encode + write to QEMU';

export function hopWindow(before: HostSample, after: HostSample, bytes: number, guest: GuestWork): HopWindow {
  const hops = new Map<string, number>();
  const vcpuWaitMs: number[] = [];
  let hostCpuMs = 0;
  for (const [key, t] of after.threads) {
    const was = before.threads.get(key);
    const ms = (t.ns - (was?.ns ?? 0)) / 1e6;
    hostCpuMs += ms;
    hops.set(t.hop, (hops.get(t.hop) ?? 0) + ms);
    if (t.hop.startsWith('QEMU vCPU')) vcpuWaitMs.push((t.waitNs - (was?.waitNs ?? 0)) / 1e6);
  }
  hops.set(MUX_SEND, after.mux.sendMs - before.mux.sendMs);
  // The guest's split of its busy time, laid over the host CPU its vCPU threads used.
  const vcpus = [...hops].filter(([hop]) => hop.startsWith('QEMU vCPU')).reduce((sum, [, ms]) => sum + ms, 0);
  const busy = Math.max(guest.guestBusy, guest.agentCpu + (guest.curlCpu ?? 0));
  const part = (cpu: number): number => (busy > 0 ? (vcpus * cpu) / busy : 0);
  hops.set(GUEST_AGENT, part(guest.agentCpu));
  if (guest.curlCpu !== undefined) hops.set(GUEST_CURL, part(guest.curlCpu));
  // Rounding leaves -0 where agent and curl were all the guest did.
  hops.set(GUEST_REST, Math.max(0, vcpus - part(guest.agentCpu) - part(guest.curlCpu ?? 0)));
  return {
    wallMs: after.at - before.at,
    bytes,
    hops,
    vcpuWaitMs,
    hostCpuMs,
    framesOut: after.mux.framesOut - before.mux.framesOut,
    creditWaitMs: after.mux.creditWaitMs - before.mux.creditWaitMs,
    agentReads: guest.agentReads,
  };
}

/** Hops that are one thread each, so one near 100% of the wall is a limit; sums of threads are not. */
const serial = (hop: string): boolean =>
  hop === 'host main thread: proxy + mux' ||
  hop.startsWith('QEMU vCPU') ||
  hop === 'QEMU main loop: agent socket ↔ virtio-serial' ||
  hop === GUEST_AGENT ||
  hop === GUEST_CURL;

interface Totals {
  readonly wallMs: number;
  readonly blocks: number;
  readonly hops: Map<string, number>;
  /** The most any one vCPU waited for a host core (by vCPU index, summed over windows). */
  readonly vcpuWaitMs: number;
  readonly hostCpuMs: number;
  readonly framesOut: number;
  readonly creditWaitMs: number;
  readonly agentReads: number;
}

function totals(windows: readonly HopWindow[]): Totals {
  const hops = new Map<string, number>();
  for (const w of windows) for (const [hop, ms] of w.hops) hops.set(hop, (hops.get(hop) ?? 0) + ms);
  const sum = (f: (w: HopWindow) => number): number => windows.reduce((s, w) => s + f(w), 0);
  return {
    wallMs: sum((w) => w.wallMs),
    blocks: sum((w) => w.bytes) / BLOCK,
    hops,
    vcpuWaitMs: Math.max(0, ...[0, 1, 2, 3].map((i) => sum((w) => w.vcpuWaitMs[i] ?? 0))),
    hostCpuMs: sum((w) => w.hostCpuMs),
    framesOut: sum((w) => w.framesOut),
    creditWaitMs: sum((w) => w.creditWaitMs),
    agentReads: sum((w) => w.agentReads),
  };
}

const ORDER = [
  'upstream',
  'host main thread',
  '  of it, mux',
  'host bench',
  'QEMU main loop',
  'QEMU other',
  'QEMU vCPU',
  'guest agent',
  'guest curl',
  'guest kernel',
];
const rank = (hop: string): number => ORDER.findIndex((prefix) => hop.startsWith(prefix));

/** µs of host CPU (every thread counted) per 64 KiB: while the host's cores bound two paths, their paces go inversely as this. */
export function hostCpuPerBlock(windows: readonly HopWindow[]): number {
  const t = totals(windows);
  return (t.hostCpuMs * 1000) / t.blocks;
}

/** The hop that bounds a transfer: the single thread busiest over its wall time, or the host's cores when a vCPU waited for one longer. */
export function boundingHop(windows: readonly HopWindow[]): { hop: string; share: number } {
  const t = totals(windows);
  let best = { hop: HOST_CORES, share: t.vcpuWaitMs / t.wallMs };
  for (const [hop, ms] of t.hops) if (serial(hop) && ms / t.wallMs > best.share) best = { hop, share: ms / t.wallMs };
  return best;
}

/**
 * The hop table, one column per transfer kind (summed over its rounds): per hop, µs per 64 KiB and
 * share of the wall time; then the mux's frames and its wait for the guest's window, and the limit.
 */
export function hopTable(columns: readonly { readonly label: string; readonly windows: readonly HopWindow[] }[]): string[] {
  const all = columns.map((c) => totals(c.windows));
  const hops = [...new Set(all.flatMap((t) => [...t.hops.keys()]))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const width = Math.max(...hops.map((h) => h.length), 40);
  const cell = (t: Totals, ms: number | undefined): string =>
    ms === undefined
      ? '—'.padStart(22)
      : `${((ms * 1000) / t.blocks).toFixed(0).padStart(7)} µs ${((ms / t.wallMs) * 100).toFixed(0).padStart(4)}% wall`;
  const lines = [`${'hop (CPU per 64 KiB; share of the wall time)'.padEnd(width)}  ${columns.map((c) => c.label.padStart(22)).join('  ')}`];
  for (const hop of hops) lines.push(`${hop.padEnd(width)}  ${all.map((t) => cell(t, t.hops.get(hop))).join('  ')}`);
  lines.push(
    `${'all host threads above: the host cores it costs'.padEnd(width)}  ${all.map((t) => cell(t, t.hostCpuMs)).join('  ')}`,
    `${'wall time on the host clock'.padEnd(width)}  ${all.map((t) => `${((t.wallMs * 1000) / t.blocks).toFixed(0).padStart(7)} µs ${'100% wall'.padStart(10)}`).join('  ')}`,
    `${'host waiting for the guest window (wall)'.padEnd(width)}  ${all.map((t) => cell(t, t.creditWaitMs)).join('  ')}`,
    `${'the vCPU waiting most for a host core'.padEnd(width)}  ${all.map((t) => cell(t, t.vcpuWaitMs)).join('  ')}`,
    `${'frames the mux wrote, per 64 KiB'.padEnd(width)}  ${all.map((t) => (t.framesOut / t.blocks).toFixed(2).padStart(22)).join('  ')}`,
    `${'agent reads (port and other), per 64 KiB'.padEnd(width)}  ${all.map((t) => (t.agentReads / t.blocks).toFixed(1).padStart(22)).join('  ')}`,
  );
  for (const c of columns) {
    const { hop, share } = boundingHop(c.windows);
    const t = totals(c.windows);
    const waited = t.creditWaitMs / t.wallMs;
    lines.push(
      `limit of ${c.label}: ${hop.trim()}, ${(share * 100).toFixed(0)}% of the wall time` +
        (waited > 0.5 ? `; the host waited for the guest's window ${(waited * 100).toFixed(0)}% of it, so the guest side bounds it` : ''),
    );
  }
  return lines;
}
