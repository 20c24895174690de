import type { VmResize, VmShellRequest } from '../owner/vmMethods.ts';
import { IMAGE_OPTION, IMAGE_SYNOPSIS, IMAGE_USAGE, imageOption } from './imageOption.ts';
import { parseCommandArgs, UsageError, type CliContext, type Command } from './context.ts';
import { PROJECT_FOLDER_OPTIONS, PROJECT_FOLDER_USAGE, projectFolderParams } from './projectFolderOption.ts';
import { resolveTarget } from './sessionTarget.ts';
import { throughVmOwner, untilExit, vmEventPrinter } from './vmOwner.ts';

export const shellCommand: Command = {
  name: 'shell',
  summary: 'an interactive shell in a new VM, or in a running session',
  usage: `capsem shell [ID|NAME] [--name N] ${IMAGE_SYNOPSIS} [--workspace DIR]

With no session named, boots a new session's VM and opens a login shell in it; the VM stops when
the shell exits. With ID or NAME, attaches to that running session's shell (it keeps running when
you leave). Everything the shell does is recorded; its terminal is kept for replay.

  --name N         the new session's display name
${IMAGE_USAGE}
${PROJECT_FOLDER_USAGE}`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      name: { type: 'string' },
      ...IMAGE_OPTION,
      ...PROJECT_FOLDER_OPTIONS,
    });
    if (positionals.length > 1) throw new UsageError('shell takes at most one session (see capsem shell --help)');
    if (positionals[0] !== undefined && values.workspace !== undefined)
      throw new UsageError('--workspace shares a folder with a new session; a running one keeps the folder it started with');
    const image = imageOption(values.image);
    const id = positionals[0] !== undefined ? resolveTarget(ctx.home, positionals[0]).id : undefined;
    return attachTerminal(ctx, `capsem shell ${positionals[0] ?? ''}`.trim(), {
      ...(id ? { id } : {}),
      name: (values.name as string | undefined) ?? null,
      image,
      ...projectFolderParams(ctx, values),
    });
  },
};

/**
 * Connects this terminal to a VM's shell through the owner: raw keystrokes in, output out, size
 * changes followed; returns the shell's exit code. Both directions go at the pace of their
 * reader: input piped in waits for the guest to take it, output for stdout to drain.
 */
export async function attachTerminal(ctx: CliContext, command: string, params: Omit<VmShellRequest, 'cols' | 'rows'>): Promise<number> {
  const stdin = process.stdin;
  const size = () => ({ cols: process.stdout.columns ?? 80, rows: process.stdout.rows ?? 24 });
  return throughVmOwner(ctx, command, async (client) => {
    const output = ctx.output;
    const stream = await client.stream('vm.shell', { ...params, ...size() } satisfies VmShellRequest, {
      onData: (b) => output.stdout(b),
      onEvent: vmEventPrinter(ctx, output),
    });
    let attached = true;
    const onInput = (b: Buffer): void => {
      if (stream.write(b)) return;
      stdin.pause();
      stream.whenDrained(() => attached && stdin.resume());
    };
    const onResize = (): void => stream.event({ type: 'resize', ...size() } satisfies VmResize);
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.on('data', onInput);
    stdin.once('end', () => stream.end());
    process.stdout.on('resize', onResize);
    try {
      return await untilExit(ctx, client, stream.exit, output);
    } finally {
      attached = false;
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.off('data', onInput);
      stdin.pause();
      process.stdout.off('resize', onResize);
    }
  });
}
