import { z } from 'zod';
import { ControlClient } from '../owner/controlClient.ts';
import { withOwnership } from '../owner/ownership.ts';
import { hostVms } from '../owner/vmHosting.ts';
import { VmStreamEvent } from '../owner/vmMethods.ts';
import type { JsonValue } from '../owner/wire.ts';
import { progressLine } from './progressLine.ts';
import type { CommandOutput } from './commandOutput.ts';
import type { CliContext } from './context.ts';

// VM commands reach VMs through the owner of CAPSEM_HOME. When no owner runs, this CLI becomes the
// owner: it hosts the VMs and serves the control socket, then talks to itself as a client, so a
// command takes the same path either way; other CLIs started meanwhile go through it. An owner CLI
// stays until the VMs it serves for others have ended.

export async function throughVmOwner(ctx: CliContext, command: string, use: (client: ControlClient) => Promise<number>): Promise<number> {
  return withOwnership(
    ctx.home,
    { kind: 'cli', command },
    async (owner) => {
      const host = hostVms(owner, ctx.home);
      if (host.leftovers.folders > 0)
        ctx.err(
          `capsem: cleaned up after an earlier run that was killed: ${host.leftovers.killed.length} process(es), ${host.leftovers.sessionsEnded.length} session(s) marked crashed`,
        );
      // Told to go, an owner stops its VMs in order first, so their sessions end as stopped, not crashed.
      const terminate = (): void => {
        ctx.err(`capsem: stopping ${host.live.length} VM(s) before exiting`);
        void host.stopAll().finally(() => process.exit(143));
      };
      process.once('SIGTERM', terminate);
      const client = await ControlClient.connect(owner.server.path);
      try {
        return await use(client);
      } finally {
        client.close();
        // This command's own VM, when it was cut short (Ctrl-C, a reader gone), is already stopping.
        const others = host.live.filter((s) => s.running).length;
        if (others > 0) ctx.err(`capsem: waiting for ${others} VM(s) started through this process by other commands`);
        await host.idle();
        process.off('SIGTERM', terminate);
      }
    },
    (client) => use(client),
    { onNote: (text) => ctx.err(`capsem: ${text}`) },
  );
}

/**
 * Renders a VM stream's events: progress on one line, status lines, stderr bytes (at the pace
 * stderr takes them), the session it runs in.
 */
export function vmEventPrinter(
  ctx: Pick<CliContext, 'err'>,
  output: CommandOutput,
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number } = process.stderr,
): (event: JsonValue) => void | Promise<void> {
  const progress = progressLine(stderr);
  return (raw) => {
    const parsed = VmStreamEvent.safeParse(raw);
    if (!parsed.success) {
      progress.finish();
      ctx.err(`capsem: ignored an event from the owner that is not a VM stream event: ${z.prettifyError(parsed.error)}`);
      return;
    }
    const event = parsed.data;
    if (event.type === 'progress') {
      progress.update(event);
      return;
    }
    progress.finish();
    if (event.type === 'stderr') return output.stderr(Buffer.from(event.data, 'base64'));
    if (event.type === 'status') ctx.err(`capsem: ${event.line}`);
    else if (event.type === 'session') ctx.err(`capsem: session ${event.id}${event.name ? ` (${event.name})` : ''}`);
  };
}

/**
 * A VM stream's exit code. Ctrl-C disconnects from the owner, which stops a VM started for this
 * command (one attached to stays up); the exit code is then 130, as for any interrupted command.
 * Stdout's reader going away does the same, with 141 whatever the command did, and so does a stdout
 * that cannot be written (a full disk), with 1.
 */
export async function untilExit(
  ctx: CliContext,
  client: ControlClient,
  exit: Promise<number | null>,
  output: CommandOutput,
): Promise<number> {
  /** The exit code of a command cut short (130 for Ctrl-C, the output's loss's); null while it runs its course. */
  let cutShort: number | null = null;
  let done = false;
  const stop = (code: number, note: string): void => {
    if (cutShort !== null || done) return;
    cutShort = code;
    ctx.err(`capsem: ${note}; stopping`);
    client.close();
  };
  const interrupt = (): void => stop(130, 'interrupted');
  process.once('SIGINT', interrupt);
  void output.broken.then((loss) => {
    // A failed write was said in its own line already (main.ts).
    stop(loss.exitCode, loss.message ? 'the output cannot be written' : 'nothing reads the output any more');
  });
  try {
    const code = (await exit) ?? 1;
    // Output was lost whatever the command did; an interrupted command that still finished keeps its code.
    return output.loss()?.exitCode ?? code;
  } catch (err) {
    if (cutShort !== null) return cutShort;
    throw err;
  } finally {
    done = true;
    process.off('SIGINT', interrupt);
  }
}
