import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

// A boot that times out is either a guest stuck or a host too busy to run it: what the VM's
// process got of the CPU in the time it ran, beside the host's load, tells the two apart.

/** utime + stime of `pid` in seconds, from /proc (clock ticks of 1/100 s on Linux); null when it cannot be read. */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks / 100 : null;
  } catch {
    return null;
  }
}

/** "the VM's process had 12.3 s of CPU in 90.0 s; the host's load average was 6.1": for a boot's timeout message. */
export function vmCpuUse(pid: number | undefined, ranMs: number): string {
  const cpu = pid === undefined ? null : processCpuSeconds(pid);
  const load = `the host's load average was ${loadavg()[0]!.toFixed(1)}`;
  return cpu === null ? load : `the VM's process had ${cpu.toFixed(1)} s of CPU in ${(ranMs / 1000).toFixed(1)} s; ${load}`;
}

/**
 * Resolves once `pid` has used under `share` of a core for `quietSeconds` seconds in a row, after
 * `maxMs` at the latest, or as soon as it cannot be read (it has gone) or `ended` resolves.
 */
export async function untilQuiet(
  pid: number | undefined,
  options: { readonly maxMs: number; readonly share?: number; readonly quietSeconds?: number; readonly ended?: Promise<unknown> },
): Promise<void> {
  if (pid === undefined) return;
  let ended = false;
  void options.ended?.then(() => (ended = true));
  const until = performance.now() + options.maxMs;
  let quiet = 0;
  let last = processCpuSeconds(pid);
  while (last !== null && !ended && performance.now() < until && quiet < (options.quietSeconds ?? 2)) {
    await new Promise((r) => setTimeout(r, 1000).unref());
    const now = processCpuSeconds(pid);
    if (now === null) return;
    quiet = now - last < (options.share ?? 0.3) ? quiet + 1 : 0;
    last = now;
  }
}
