import { isSameProcessAlive } from '../platform/processIdentity.ts';
import { findOwner } from '../owner/ownership.ts';
import { readOwnerLock } from '../owner/ownerLock.ts';
import { ownerPaths } from '../owner/ownerPaths.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';

export const ownerCommand: Command = {
  name: 'owner',
  summary: 'say which process owns this CAPSEM_HOME (runs its VMs, proxy and writers)',
  usage: `capsem owner [--json]

Asks the owner of CAPSEM_HOME over its control socket (run/control.sock) who it is: its pid,
kind (app or cli), command, and since when. Prints "no owner running" when nobody owns it; the
next command that needs an owner then becomes one for its duration.

  --json   print {"owner": {pid, kind, command, startedAt, version} or null, "socket": path}`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, { json: { type: 'boolean' } });
    if (positionals.length > 0) throw new UsageError('owner takes no arguments (see capsem owner --help)');
    const { socket } = ownerPaths(ctx.home);
    const running = await findOwner(ctx.home);
    running?.client.close();
    if (!running) {
      // A lock whose process lives but does not answer is an owner still starting, or a stuck one.
      const held = readOwnerLock(ctx.home)?.record;
      if (held && isSameProcessAlive(held.pid, held.procStart))
        throw new Error(`pid ${held.pid} (${held.command}) holds the owner lock but does not answer on ${socket}`);
    }
    if (values.json) {
      ctx.out(JSON.stringify({ owner: running?.info ?? null, socket }));
    } else if (running) {
      const { pid, kind, command, startedAt, version } = running.info;
      ctx.out(
        [`owner:   pid ${pid} (${kind})`, `command: ${command}`, `since:   ${startedAt}`, `version: ${version}`, `socket:  ${socket}`].join(
          '\n',
        ),
      );
    } else {
      ctx.out('no owner running');
    }
    return 0;
  },
};
