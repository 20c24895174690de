import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isSessionId, type SessionId } from '../contract/ids.ts';
import { ABANDONED_REASON } from '../store/abandonedSessions.ts';
import { openMainDb } from '../store/mainDb.ts';
import type { CapsemHome } from '../store/paths.ts';
import { getSession } from '../store/registry.ts';
import { rollUpSession } from '../store/rollup.ts';

// A killed owner can leave VM processes (where pdeathsig is unavailable) and always leaves their
// run folders. Each launch records its pids in run/vms/<session>/pids.json; the next owner kills
// those that are still the processes recorded (their command line names that folder, so a reused
// pid is never touched), sees the session ended as crashed (store/abandonedSessions.ts) and removes
// the folder.

export interface LeftoverCleanup {
  readonly killed: readonly number[];
  readonly folders: number;
  readonly sessionsEnded: readonly string[];
}

function commandLine(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return null;
  }
}

export function cleanLeftovers(home: CapsemHome): LeftoverCleanup {
  const root = join(home.runDir, 'vms');
  if (!existsSync(root)) return { killed: [], folders: 0, sessionsEnded: [] };
  const killed: number[] = [];
  const sessionsEnded: string[] = [];
  let folders = 0;
  for (const entry of readdirSync(root)) {
    const dir = join(root, entry);
    try {
      const record = JSON.parse(readFileSync(join(dir, 'pids.json'), 'utf8')) as { pids?: unknown };
      for (const pid of Array.isArray(record.pids) ? record.pids : []) {
        if (typeof pid !== 'number') continue;
        if (!commandLine(pid)?.includes(dir)) continue;
        try {
          process.kill(pid, 'SIGKILL');
          killed.push(pid);
        } catch {
          continue;
        }
      }
    } catch {
      // No record (killed before QEMU started): only the folder is left.
    }
    if (isSessionId(entry) && endOrphan(home, entry)) sessionsEnded.push(entry);
    rmSync(dir, { recursive: true, force: true });
    folders += 1;
  }
  return { killed, folders, sessionsEnded };
}

/** Whether the leftover's session now reads as ended by its owner's death. */
function endOrphan(home: CapsemHome, id: SessionId): boolean {
  // Opening main.db has already ended it if main.db names the dead owner as its runner.
  const db = openMainDb(home);
  try {
    const session = getSession(db, id);
    // One entered before main.db named runners: its folder is left by a dead owner all the same.
    if (session?.status === 'running') rollUpSession(home, db, session.id, { status: 'crashed', reason: ABANDONED_REASON });
    return getSession(db, id)?.statusReason === ABANDONED_REASON;
  } finally {
    db.close();
  }
}
