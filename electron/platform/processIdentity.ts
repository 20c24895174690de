import { readFileSync } from 'node:fs';

// A pid alone does not name a process: after a crash the kernel may hand the same pid to an
// unrelated program. Where /proc exists, the pair (pid, start time) does name one.

/** The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or null without /proc. */
export function processStartTicks(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces and ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

/** True while `pid` runs and, when its start time was recorded, is still the same process. */
export function isSameProcessAlive(pid: number, startTicks: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the pid runs, under another user; only ESRCH means it is gone.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A recorded start time means /proc existed; an unreadable one now means the pid just exited.
  return startTicks === null || processStartTicks(pid) === startTicks;
}
