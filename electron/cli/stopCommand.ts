import { ControlCallError } from '../owner/controlClient.ts';
import { findOwner } from '../owner/ownership.ts';
import type { VmStopRequest } from '../owner/vmMethods.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { resolveTarget } from './sessionTarget.ts';

export const stopCommand: Command = {
  name: 'stop',
  summary: 'stop a running session (its VM shuts down in order)',
  usage: `capsem stop ID|NAME

Asks the process that owns CAPSEM_HOME (the app, or the capsem command that started the VM) to
shut the session's VM down in order: the guest syncs and powers off, every row is committed and the
session is rolled up.`,
  async run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    if (positionals.length !== 1) throw new UsageError('stop takes one session id or name (see capsem stop --help)');
    const target = resolveTarget(ctx.home, positionals[0]!);
    const label = target.record?.name ? `${target.id} (${target.record.name})` : target.id;
    const owner = await findOwner(ctx.home);
    if (!owner) throw new Error(`session ${label} is not running: no app or capsem command owns ${ctx.home.root}`);
    try {
      await owner.client.call('vm.stop', { id: target.id } satisfies VmStopRequest);
    } catch (err) {
      if (err instanceof ControlCallError && err.code === 'not_running') throw new Error(`session ${label} is not running`);
      if (err instanceof ControlCallError && err.code === 'unknown_method')
        throw new Error(`the owner of ${ctx.home.root} (pid ${owner.info.pid}, ${owner.info.command}) runs no VMs`);
      throw err;
    } finally {
      owner.client.close();
    }
    ctx.out(`stopped ${label}`);
    return 0;
  },
};
