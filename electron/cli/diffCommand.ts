import { patchOf, readSpan } from '../changes/fileDiff.ts';
import { isBinary } from '../changes/gitPatch.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { openSessionChanges, targetOf } from './sessionChanges.ts';

export const diffCommand: Command = {
  name: 'diff',
  summary: 'print what a session changed in its workspace, as a patch git apply takes',
  usage: `capsem diff ID|NAME [--turn N | --change ID] [PATH…]

Prints the session's workspace changes as a patch in git's format: the whole session (the folder
as it started against as it was last recorded, as git diff shows it), one Conversation turn's
changes (--turn N, its index in the Conversation view), one change (--change ID, its id in the
Files view), or the changes to some paths (a folder takes everything under it). Apply it with
git apply or patch -p1 in a copy of the folder as it started. Binary contents are written as git's
binary patches (git apply takes them, patch -p1 does not). A path whose content was not kept
(over 2 MiB, not recorded) is left out and named on stderr, and the exit status is then 1.

  --turn N    the changes made by the tool calls of turn N
  --change ID one change`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, { turn: { type: 'string' }, change: { type: 'string' } });
    if (positionals.length === 0) throw new UsageError('diff takes a session (see capsem diff --help)');
    const [name, ...paths] = positionals;
    const target = targetOf(values, paths, true);
    const opened = openSessionChanges(ctx.home, name!);
    try {
      let left = 0;
      let binary = 0;
      for (const span of opened.changes.spans(opened.session, opened.ended, target)) {
        const read = readSpan(span, opened.store);
        const patch = patchOf(read);
        if (patch.text === null) {
          left++;
          ctx.err(`capsem: left out ${JSON.stringify(span.path)}: ${patch.reason}`);
          continue;
        }
        if (read.kind === 'content' && [read.before, read.after].some((s) => s !== null && isBinary(s.content))) binary++;
        await ctx.output.stdout(Buffer.from(patch.text, 'latin1'));
      }
      if (binary > 0)
        ctx.err(`capsem: ${binary} binary file${binary === 1 ? '' : 's'} in the patch: git apply takes them, patch -p1 does not`);
      return left > 0 ? 1 : 0;
    } finally {
      opened.close();
    }
  },
};
