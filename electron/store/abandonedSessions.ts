import type Database from 'better-sqlite3';
import type { SessionId } from '../contract/ids.ts';
import type { CapsemHome } from './paths.ts';
import type { SessionRecord } from './registry.ts';
import { liveRollup, writeRollup, type Rollup } from './rollup.ts';
import { runnerAlive, type SessionRunner } from './sessionRunner.ts';
import { DEFAULT_WRITER_LIMITS } from './sessionWriter.ts';

// A session whose recorder was killed (SIGKILL, a crash, the machine's OOM killer) would read
// `running` forever. Its runner is named in main.db (sessionRunner.ts); once that process is
// gone, the session ends crashed, at its last recorded row, rolled up as any ended session is.
// The end is a compare-and-set on the runner: a session resumed meanwhile by a live process has
// another runner and is left alone.

export const ABANDONED_REASON = 'the process recording it ended without ending it (it was killed, or crashed)';

/** A running session as main.db names its runner. */
export interface RunningRow extends SessionRunner {
  readonly id: SessionId;
  readonly createdAt: string;
}

/** Ends every running session whose runner is gone; returns their ids. */
export function endAbandonedSessions(home: CapsemHome, mainDb: Database.Database): SessionId[] {
  const running = mainDb
    .prepare(
      `SELECT id, created_at AS createdAt, runner_pid AS pid, runner_start AS start
       FROM sessions WHERE status = 'running' AND runner_pid IS NOT NULL`,
    )
    .all() as RunningRow[];
  return running.filter((row) => !runnerAlive(row) && endAbandoned(home, mainDb, row)).map((row) => row.id);
}

/** Ends one session whose runner `row` names as gone, unless it is no longer that runner's. */
export function endAbandoned(home: CapsemHome, mainDb: Database.Database, row: RunningRow): boolean {
  let rollup: Rollup | null = null;
  try {
    rollup = liveRollup(home, row.id);
  } catch {
    // A session.db that cannot be read any more: the session still ends, with main.db's figures.
  }
  const endedAt = rollup?.activity.lastEventAt ?? row.createdAt;
  return mainDb
    .transaction(() => {
      const still = mainDb
        .prepare("SELECT 1 FROM sessions WHERE id = ? AND status = 'running' AND runner_pid = ? AND runner_start IS ?")
        .get(row.id, row.pid, row.start);
      if (!still) return false;
      writeRollup(mainDb, row.id, rollup, { status: 'crashed', reason: ABANDONED_REASON, endedAt });
      return true;
    })
    .immediate();
}

/** What `capsem check` says of a session that ended this way: its last moments may not be there. */
export function abandonedNotes(record: SessionRecord | null): string[] {
  if (record?.status !== 'crashed' || record.statusReason !== ABANDONED_REASON) return [];
  return [
    `${ABANDONED_REASON}: rows its writer had not yet committed may be missing, up to one batch ` +
      `(${DEFAULT_WRITER_LIMITS.maxBatchDelayMs} ms of traffic; more only if the writer had fallen behind); the session ends at its last recorded row`,
  ];
}
