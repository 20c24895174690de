import { realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import { folderHolds, realPathOr } from './realFolders.ts';

// A session's project folder: a host folder shared read-write with the guest at /workspace. It is
// checked before anything is registered, so a folder that cannot be shared leaves no session
// behind. A folder that holds the user's whole home (or is the whole computer) would open every
// key, token and other project in it to the agent: it is shared only when the user says so.
// Capsem's own data is never shared: an agent could read and rewrite other sessions' records.

export type ProjectFolderProblem = 'not_found' | 'not_a_folder' | 'whole_home' | 'capsem_data';

export class ProjectFolderError extends Error {
  override name = 'ProjectFolderError';

  constructor(
    readonly code: ProjectFolderProblem,
    message: string,
  ) {
    super(message);
  }
}

export interface ProjectFolderRules {
  /** The user's home folder. */
  readonly home: string;
  /** CAPSEM_HOME's root. */
  readonly capsemHome: string;
  /** The user has said to share a folder that holds their whole home. */
  readonly wholeHomeConfirmed: boolean;
  /** How this front door confirms it, for the message: `add --yes-whole-home`. */
  readonly confirmHint: string;
}

/**
 * The folder's real path when it may be shared; otherwise a ProjectFolderError whose message is one
 * line naming the fix. `path` must be absolute: the front door resolves a relative one against its
 * user's current folder.
 */
export function checkProjectFolder(path: string, rules: ProjectFolderRules): string {
  if (!isAbsolute(path)) throw new ProjectFolderError('not_found', `the project folder must be an absolute path, not "${path}"`);
  let folder: string;
  try {
    folder = realpathSync(path);
  } catch {
    throw new ProjectFolderError(
      'not_found',
      `the project folder ${path} does not exist; create it (mkdir -p ${path}) or name another folder`,
    );
  }
  if (!statSync(folder).isDirectory()) {
    throw new ProjectFolderError('not_a_folder', `${path} is a file, not a folder; share the folder that holds it (${dirname(folder)})`);
  }
  const home = realPathOr(rules.home);
  const capsemHome = realPathOr(rules.capsemHome);
  if (folderHolds(capsemHome, folder)) {
    throw new ProjectFolderError(
      'capsem_data',
      `${path} is inside Capsem's own data (CAPSEM_HOME ${capsemHome}), which a session must not see; share your project's folder instead`,
    );
  }
  const holdsHome = folderHolds(folder, home);
  if (holdsHome && !rules.wholeHomeConfirmed) {
    const what =
      folder === '/' ? 'the whole computer' : folder === home ? 'your whole home folder' : `a folder that holds your whole home (${home})`;
    throw new ProjectFolderError(
      'whole_home',
      `${path} is ${what}: every key, token and project in it would be open to the agent; share your project's folder instead, or ${rules.confirmHint} if you mean it`,
    );
  }
  if (!holdsHome && folderHolds(folder, capsemHome)) {
    throw new ProjectFolderError(
      'capsem_data',
      `${path} holds Capsem's own data (CAPSEM_HOME ${capsemHome}), which a session must not see; share a folder beside it, or move CAPSEM_HOME out of it`,
    );
  }
  return folder;
}
