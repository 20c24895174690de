import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { checkProjectFolder, ProjectFolderError } from '../vm/projectFolder.ts';
import { UsageError, type CliContext } from './context.ts';

// --workspace DIR and --yes-whole-home, shared by capsem run and capsem shell. The folder is taken
// relative to the user's current folder here, at the edge (the owner may be another process, the
// app, with another current folder), and checked before the owner is reached: a folder that cannot
// be shared is a usage error that starts nothing and registers nothing.

export const PROJECT_FOLDER_OPTIONS = { workspace: { type: 'string' }, 'yes-whole-home': { type: 'boolean' } } as const;

export const PROJECT_FOLDER_USAGE = `  --workspace DIR  share DIR (relative to this folder) with the VM at /workspace, read-write:
                   the agent sees your files as writable, and what it makes there is yours.
                   Without it the session gets a fresh folder of its own.
  --yes-whole-home share DIR even when it is your whole home folder or /`;

/** vm.run and vm.shell's workspace params: the checked folder's real path, or nothing. */
export function projectFolderParams(
  ctx: CliContext,
  values: { readonly workspace?: unknown; readonly 'yes-whole-home'?: unknown },
): { workspace?: string; wholeHome?: boolean } {
  const wholeHome = values['yes-whole-home'] === true;
  if (values.workspace === undefined) {
    if (wholeHome) throw new UsageError('--yes-whole-home goes with --workspace DIR');
    return {};
  }
  if (typeof values.workspace !== 'string' || values.workspace === '') throw new UsageError('--workspace needs a folder: --workspace DIR');
  try {
    const folder = checkProjectFolder(resolve(values.workspace), {
      home: homedir(),
      capsemHome: ctx.home.root,
      wholeHomeConfirmed: wholeHome,
      confirmHint: 'add --yes-whole-home',
    });
    return { workspace: folder, wholeHome };
  } catch (err) {
    if (err instanceof ProjectFolderError) throw new UsageError(err.message);
    throw err;
  }
}
