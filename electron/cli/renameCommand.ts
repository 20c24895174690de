import { openMainDb } from '../store/mainDb.ts';
import { renameSession } from '../store/registry.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { targetSession } from './sessionTarget.ts';

export const renameCommand: Command = {
  name: 'rename',
  summary: 'give a session another display name',
  usage: `capsem rename ID|NAME NEW-NAME

Changes the session's display name in the registry; its id, folder, tabs and routes stay as they
are. Names are unique among sessions that can be resumed.`,
  run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    if (positionals.length !== 2) throw new UsageError('rename takes a session and its new name (see capsem rename --help)');
    const db = openMainDb(ctx.home);
    try {
      const { id, record } = targetSession(ctx.home, db, positionals[0]);
      const renamed = renameSession(db, id, positionals[1]!);
      ctx.out(`renamed ${id}${record?.name ? ` from ${record.name}` : ''} to ${renamed.name}`);
      return 0;
    } finally {
      db.close();
    }
  },
};
