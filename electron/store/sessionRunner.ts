import { isSameProcessAlive, processStartTicks } from '../platform/processIdentity.ts';

// The process that records a running session: the one whose writer and proxy it has. main.db
// names it as the owner lock names its holder, by pid and start time, so a pid the kernel handed
// to another program after a crash is never taken for the recorder.

export interface SessionRunner {
  readonly pid: number;
  /** /proc start time of `pid`; null where there is no /proc (the pid alone is then all we know). */
  readonly start: string | null;
}

/** This process, as the runner of the sessions it registers or resumes. */
export function thisRunner(): SessionRunner {
  return { pid: process.pid, start: processStartTicks(process.pid) };
}

/** True while the runner still runs. Without a start time a reused pid reads as alive: a session is never ended on a guess. */
export function runnerAlive(runner: SessionRunner): boolean {
  return isSameProcessAlive(runner.pid, runner.start);
}
