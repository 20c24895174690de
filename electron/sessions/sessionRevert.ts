import type { ChangeTarget, RevertResult } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import type { ContentStore } from '../changes/contentStore.ts';
import { revertWorkspace, workspaceRoot } from '../changes/revertWorkspace.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { SessionWriter } from '../store/sessionWriter.ts';
import type { RowOf } from '../store/sessionSchema.ts';
import type { OpenSession } from './sessionStores.ts';
import type { WorkspaceChanges } from './workspaceChanges.ts';

// A revert, for `capsem revert` and the window's button alike: the steps a session's recorded
// changes give, written into its workspace folder, each write recorded as a 'restored' change. A
// running session is reverted only by the process that records it (the window's owner): its
// recorder knows each file's last version and must record the writes itself, after every change
// the guest reported before them. Another process refuses it.

export class RevertRefused extends Error {
  override name = 'RevertRefused';
}

/** The folder the session shared: the project folder it was started on (session_meta vm_workspace, as a resume reads it), or its own. */
export function sessionWorkspace(home: CapsemHome, id: SessionId, session: OpenSession): string {
  const folder = session.store.db.prepare("SELECT value FROM session_meta WHERE key = 'vm_workspace'").pluck().get();
  return typeof folder === 'string' ? folder : sessionPaths(home, id).workspaceDir;
}

/** The recording of a running session, in the process that hosts it. */
export interface LiveRecording {
  /** Resolves once every change the guest reported so far is a committed row. */
  changesSettled(): Promise<void>;
  recordHostWrites(rows: readonly RowOf<'fs_events'>[]): void;
}

export interface RevertInput {
  readonly home: CapsemHome;
  readonly id: SessionId;
  readonly session: OpenSession;
  readonly ended: boolean;
  readonly changes: WorkspaceChanges;
  readonly store: ContentStore;
  /** The session's recording when it runs in this process. */
  readonly live?: LiveRecording;
}

export async function revertSession(input: RevertInput, target: ChangeTarget): Promise<RevertResult> {
  const { home, id, session, ended, changes, store, live } = input;
  if (!ended && !live)
    throw new RevertRefused(
      `session ${id} is being recorded by another Capsem process: revert it from the window (Files → Revert), or stop it first (capsem stop ${id})`,
    );
  if (live) await live.changesSettled();
  const steps = changes.revertSteps(session, ended, target);
  if (steps.length === 0) return { restored: [], refused: [] };
  const root = workspaceRoot(sessionWorkspace(home, id, session));
  if (live) {
    const outcome = revertWorkspace(root, store, steps);
    live.recordHostWrites(outcome.rows);
    return { restored: outcome.restored, refused: outcome.refused };
  }
  // Opened before anything is written: a session.db that cannot take the record stops the revert.
  const writer = await SessionWriter.open(sessionPaths(home, id).dbPath);
  try {
    const outcome = revertWorkspace(root, store, steps);
    for (const row of outcome.rows) writer.append('fs_events', row);
    return { restored: outcome.restored, refused: outcome.refused };
  } finally {
    await writer.close();
  }
}
