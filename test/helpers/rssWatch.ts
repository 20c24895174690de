import { readFileSync } from 'node:fs';

// How much memory a process holds while a test floods it: its resident set, sampled until the
// flood is over, against the reading when it began.

/** A process's resident set in bytes, from /proc (Linux). */
export function rssOf(pid: number): number {
  const found = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return found ? Number(found[1]) * 1024 : 0;
}

export interface RssWatch {
  /** Stops sampling: the most the resident set grew past its first reading, in MiB. */
  stop(): number;
}

/** Samples `read` (bytes) every `everyMs` from now. */
export function watchRss(read: () => number, everyMs = 20): RssWatch {
  const baseline = read();
  let peak = baseline;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, read());
    } catch {
      // The process has gone: its last reading stands.
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return (peak - baseline) / 2 ** 20;
    },
  };
}
