import { revertSession } from '../sessions/sessionRevert.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { openSessionChanges, targetOf } from './sessionChanges.ts';

export const revertCommand: Command = {
  name: 'revert',
  summary: "put files of a session's workspace back as they were before a change, a turn or the session",
  usage: `capsem revert ID|NAME (--turn N | --change ID | PATH…)

Writes into the session's workspace folder the contents its files had before one change
(--change ID, its id in the Files view or in capsem diff), before Conversation turn N (--turn N:
that turn's changes and every later one are undone, so the folder is as it was before the turn),
or before the session (PATH…, a folder takes everything under it). What each path holds now is
kept first, and each write is recorded as a 'restored' change: a revert can itself be reverted
with --change. A path is left as it is, with the reason, where its content before was not kept
or what is there now cannot be kept (over 2 MiB), and nothing is written through a symlink
out of the folder. A running session is reverted from the window that records it (Files →
Revert); here it is refused: stop it first. Exit status 1 when a path was
left as it is.`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, { turn: { type: 'string' }, change: { type: 'string' } });
    if (positionals.length === 0) throw new UsageError('revert takes a session (see capsem revert --help)');
    const [name, ...paths] = positionals;
    const target = targetOf(values, paths, false);
    const opened = openSessionChanges(ctx.home, name!);
    try {
      const result = await revertSession({ ...opened, home: ctx.home }, target);
      for (const r of result.restored) ctx.out(`${r.action === 'removed' ? 'removed ' : 'restored'} ${JSON.stringify(r.path)}`);
      for (const r of result.refused) ctx.err(`capsem: left ${JSON.stringify(r.path)} as it is: ${r.reason}`);
      if (result.restored.length === 0 && result.refused.length === 0)
        ctx.out('nothing to revert: the folder already holds those contents');
      return result.refused.length > 0 ? 1 : 0;
    } finally {
      opened.close();
    }
  },
};
