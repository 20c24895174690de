import type { SessionId } from '../contract/ids.ts';
import { openMainDb } from './mainDb.ts';
import type { CapsemHome } from './paths.ts';
import { releaseName } from './registry.ts';
import { rollUpSession } from './rollup.ts';

// A session whose start failed (its database could not be made, its proxy or its VM did not
// start) ends crashed with the reason instead of being removed: main.db is the ledger of what was
// tried, the app's list says why a start from the window failed after the message is gone, and a
// VM's console log stays in the session folder for the diagnosis. It must not stay `running`, nor
// hold its name: a new session gives the name up so the next try can take it; a resumed one keeps
// it, being the same session with what it recorded before.

export interface FailedStart {
  /** True for a session entered for this start; false for a resume of an existing one. */
  readonly releaseName: boolean;
}

/** Ends the session crashed with `reason`; throws, saying both, when main.db cannot be written either. */
export function endFailedStart(home: CapsemHome, id: SessionId, reason: string, how: FailedStart): void {
  try {
    const db = openMainDb(home);
    try {
      // The name first: of the two writes, it is the one a user would be stuck without.
      if (how.releaseName) releaseName(db, id);
      rollUpSession(home, db, id, { status: 'crashed', reason });
    } finally {
      db.close();
    }
  } catch (err) {
    throw new Error(`${reason}; and main.db could not be told so: ${(err as Error).message}`);
  }
}
