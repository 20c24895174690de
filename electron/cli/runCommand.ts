import type { VmRunRequest } from '../owner/vmMethods.ts';
import { CANNOT_RECORD_EXIT } from '../proxy/recordingSession.ts';
import { commandOutput } from './commandOutput.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { PROJECT_FOLDER_OPTIONS, PROJECT_FOLDER_USAGE, projectFolderParams } from './projectFolderOption.ts';
import { throughVmOwner, untilExit, vmEventPrinter } from './vmOwner.ts';

export const runCommand: Command = {
  name: 'run',
  summary: 'boot a VM, run a command in it, and record everything it does',
  usage: `capsem run [--name N] [--image agent|minimal] [--workspace DIR] -- CMD [ARGS...]

Boots a new session's VM, runs CMD in it (in /workspace, the session's shared folder), streams its
output here and exits with CMD's exit code. The VM's only way out is the recording proxy: every
connection, model call, tool call, file change and command is recorded in the session.

If the session cannot be recorded any more (its disk is full or failing), the proxy refuses the
guest's new requests, the VM is stopped in order, the session ends crashed with what was lost,
and capsem exits ${CANNOT_RECORD_EXIT} (EX_IOERR) saying why.

Output is taken at the pace of whatever reads it: a slow reader slows CMD down, it does not fill
memory. If the reader goes away (| head), capsem stops the VM in order and exits with 141, as a
command killed by SIGPIPE would.

  --name N         give the session a display name (resume and list by it)
  --image KIND     agent (default): Debian with bash, git, curl, python3, node
                   minimal: busybox only, boots fastest
${PROJECT_FOLDER_USAGE}

The first run builds the image (about 2 minutes for agent) and caches it under CAPSEM_HOME.
If the app or another capsem command owns CAPSEM_HOME, the VM runs there and shows up live in it.`,
  async run(ctx, argv) {
    const dash = argv.indexOf('--');
    const { values, positionals } = parseCommandArgs(this, dash >= 0 ? argv.slice(0, dash) : argv, { name: { type: 'string' }, image: { type: 'string' }, ...PROJECT_FOLDER_OPTIONS });
    const command = dash >= 0 ? argv.slice(dash + 1) : positionals;
    if (command.length === 0) throw new UsageError('run needs a command after -- (see capsem run --help)');
    const image = (values.image as string | undefined) ?? 'agent';
    if (image !== 'agent' && image !== 'minimal') throw new UsageError(`--image takes agent or minimal, not "${image}"`);
    const params: VmRunRequest = { name: (values.name as string | undefined) ?? null, image, ...projectFolderParams(ctx, values), argv: command };
    return throughVmOwner(ctx, `capsem run -- ${command.join(' ')}`, async (client) => {
      const output = commandOutput();
      const stream = await client.stream('vm.run', params, { onData: (b) => output.stdout(b), onEvent: vmEventPrinter(ctx, output) });
      return untilExit(ctx, client, stream.exit, output);
    });
  },
};
