import type { ChangeTarget, RevertResult } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import type { ContentStore } from '../changes/contentStore.ts';
import { revertWorkspace, workspaceRoot } from '../changes/revertWorkspace.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { SessionWriter } from '../store/sessionWriter.ts';
import type { OpenSession } from './sessionStores.ts';
import type { WorkspaceChanges } from './workspaceChanges.ts';

// A revert of an ended session, for `capsem revert` and the window's button alike: the steps its
// recorded changes give, written into its workspace folder, each write recorded in its session.db
// as a 'restored' change. A running session is refused: its guest sees the folder and its recorder
// knows each file's last version, so a write behind their backs would be recorded wrong.

export class RevertRefused extends Error {
  override name = 'RevertRefused';
}

/** The folder the session shared: the project folder it was started on (session_meta vm_workspace, as a resume reads it), or its own. */
export function sessionWorkspace(home: CapsemHome, id: SessionId, session: OpenSession): string {
  const folder = session.store.db.prepare("SELECT value FROM session_meta WHERE key = 'vm_workspace'").pluck().get();
  return typeof folder === 'string' ? folder : sessionPaths(home, id).workspaceDir;
}

export interface RevertInput {
  readonly home: CapsemHome;
  readonly id: SessionId;
  readonly session: OpenSession;
  readonly ended: boolean;
  readonly changes: WorkspaceChanges;
  readonly store: ContentStore;
}

export async function revertSession(input: RevertInput, target: ChangeTarget): Promise<RevertResult> {
  const { home, id, session, ended, changes, store } = input;
  if (!ended) throw new RevertRefused(`session ${id} is running: stop it first (capsem stop ${id}), then revert`);
  const steps = changes.revertSteps(session, ended, target);
  if (steps.length === 0) return { restored: [], refused: [] };
  const root = workspaceRoot(sessionWorkspace(home, id, session));
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
