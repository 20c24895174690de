import { resolve } from 'node:path';
import { importSession } from '../archive/importSession.ts';
import { openMainDb } from '../store/mainDb.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { archiveProgress } from './exportCommand.ts';

export const importCommand: Command = {
  name: 'import',
  summary: 'add a session from an archive (capsem export) or a bare session.db',
  usage: `capsem import FILE

Reads FILE, a session archive written by capsem export or a session.db that follows the
session database spec, and adds it as a new read-only session (status stopped, mode imported;
it cannot be resumed). An archive is verified before anything is kept: its manifest, the
SHA-256 and size of every member, and its format version; members that are links, absolute
paths, paths that climb out, unlisted, oversized or that inflate like a compression bomb are
refused with the reason. The session.db is checked page by page; a virtual table refuses it,
and triggers, views and indexes that are not this app's are dropped from the imported copy
before anything writes to it, so nothing in the file runs. Nothing is overwritten: a session
id already here gets a new id, and a name already used gets a suffix (co-work1-2).

Prints the new session's id and name.`,
  async run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    if (positionals.length !== 1) throw new UsageError('import takes one file (see capsem import --help)');
    const file = resolve(positionals[0]!);
    const mainDb = openMainDb(ctx.home);
    try {
      const progress = archiveProgress();
      let result;
      try {
        result = await importSession(ctx.home, mainDb, file, { onProgress: progress.onProgress });
      } finally {
        progress.finish();
      }
      ctx.out(
        `Imported session ${result.id} (${result.name ?? 'no name'}) from ${result.source === 'archive' ? 'archive' : 'session.db'} ${file}`,
      );
      if (result.originalId) ctx.out(`  id ${result.originalId} is already here; the import got a new id`);
      if (result.originalName) ctx.out(`  name "${result.originalName}" is already used; the import is named ${result.name ?? '(none)'}`);
      if (result.dropped.length > 0) ctx.out(`  dropped from the imported copy, so none of it runs: ${result.dropped.join(', ')}`);
      if (result.contents > 0)
        ctx.out(`  ${result.contents.toLocaleString('en')} workspace contents (files as the session saw them) checked and stored`);
      if (result.adopted) ctx.out("  the file came from another tool: this app's columns (seq, event ids) were added to the imported copy");
      return 0;
    } finally {
      mainDb.close();
    }
  },
};
