import { ControlClient } from '../owner/controlClient.ts';
import { withOwnership } from '../owner/ownership.ts';
import type { JsonValue } from '../owner/wire.ts';
import { findQemu, QemuBackend } from '../vm/qemuBackend.ts';
import { VmHost, type RunEvent } from '../vm/vmHost.ts';
import { progressLine } from '../vm/progressLine.ts';
import type { CliContext } from './context.ts';

// VM commands reach VMs through the owner of CAPSEM_HOME. When no owner runs, this CLI becomes the
// owner: it hosts the VMs and serves the control socket, then talks to itself as a client, so a
// command takes the same path either way; other CLIs started meanwhile go through it. An owner CLI
// stays until the VMs it serves for others have ended.

export function qemuOrExplain(): QemuBackend {
  const paths = findQemu();
  if (!paths) throw new Error('qemu-system-x86_64 is not installed (apt-get install -y qemu-system-x86); run capsem doctor');
  return new QemuBackend(paths);
}

export async function throughVmOwner(ctx: CliContext, command: string, use: (client: ControlClient) => Promise<number>): Promise<number> {
  return withOwnership(
    ctx.home,
    { kind: 'cli', command },
    async (owner) => {
      const host = new VmHost({ home: ctx.home, backend: qemuOrExplain });
      if (host.leftovers.folders > 0) ctx.err(`capsem: cleaned up after an earlier run that was killed: ${host.leftovers.killed.length} process(es), ${host.leftovers.sessionsEnded.length} session(s) marked crashed`);
      for (const [name, handler] of Object.entries(host.methods())) owner.server.register(name, handler);
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
        if (host.live.length > 0) ctx.err(`capsem: waiting for ${host.live.length} VM(s) started through this process by other commands`);
        await host.idle();
        process.off('SIGTERM', terminate);
      }
    },
    (client) => use(client),
    { onNote: (text) => ctx.err(`capsem: ${text}`) },
  );
}

/** Renders a VM stream's events: progress on one line, status lines, stderr bytes, the session it runs in. */
export function vmEventPrinter(ctx: CliContext, stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number } = process.stderr): (event: JsonValue) => void {
  const progress = progressLine(stderr);
  return (raw) => {
    const event = raw as unknown as RunEvent;
    switch (event.type) {
      case 'progress':
        return progress.update(event);
      case 'status':
        progress.finish();
        return ctx.err(`capsem: ${event.line}`);
      case 'session':
        progress.finish();
        return ctx.err(`capsem: session ${event.id}${event.name ? ` (${event.name})` : ''}`);
      case 'stderr':
        progress.finish();
        stderr.write(Buffer.from(event.data, 'base64'));
        return;
    }
  };
}

/**
 * A VM stream's exit code. Ctrl-C disconnects from the owner, which stops a VM started for this
 * command (one attached to stays up); the exit code is then 130, as for any interrupted command.
 */
export async function untilExit(ctx: CliContext, client: ControlClient, exit: Promise<number | null>): Promise<number> {
  let interrupted = false;
  const interrupt = (): void => {
    interrupted = true;
    ctx.err('capsem: interrupted; stopping');
    client.close();
  };
  process.once('SIGINT', interrupt);
  try {
    return (await exit) ?? 1;
  } catch (err) {
    if (interrupted) return 130;
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
  }
}
