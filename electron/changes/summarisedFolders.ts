// git and package managers write hundreds of files at a time under .git/ and node_modules/ (a
// commit's objects, an install's packages). What happens below those folders is the tools' own
// business, not the user's work: the recording sums it up (one fs_events row per batch, folder and
// action) and a workspace baseline leaves it out. One rule for both, here.

/** Folders whose insides are summarised wherever they sit in the workspace. */
const SUMMARISED = new Set(['.git', 'node_modules']);

/** The summarised folder a path lies in ('node_modules/', 'web/.git/'), or null for a path of its own. */
export function summarisedFolder(path: string, isDir: boolean): string | null {
  const parts = path.split('/');
  const at = parts.findIndex((part) => SUMMARISED.has(part));
  if (at < 0) return null;
  // A file named .git is a worktree's or submodule's pointer: the user's own, one row.
  if (at === parts.length - 1 && !isDir) return null;
  return `${parts.slice(0, at + 1).join('/')}/`;
}
