import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { z } from 'zod';
import { CANNOT_RECORD_EXIT } from '../recording/sessionRecording.ts';
import { MissingAgentKeyError } from '../vm/agentCredentials.ts';
import type { ExitStatus } from '../vm/mux.ts';
import { SessionStartRefused } from '../vm/sessionStartRefused.ts';
import type { ProjectFolderChoice, StartReporter, VmHost } from '../vm/vmHost.ts';
import type { VmSession } from '../vm/vmSession.ts';
import { defineMethod, MethodError, type MethodRegistry, type OwnerStream } from './controlSocket.ts';
import { VmResizeEvent, VmRunParams, VmShellParams, VmStopParams, type RunEvent } from './vmMethods.ts';

// The control-socket methods that reach an owner's VMs: vm.run (boot, run one command, stream its
// output, stop), vm.shell (a terminal, on a new session or attached to a live one), vm.stop and
// vm.list. The CLI uses these methods whether it is the owner or a client, so both take one path;
// the VM host itself knows nothing of the socket.

const reporter = (event: (e: RunEvent) => void): StartReporter => ({
  status: (line) => event({ type: 'status', line }),
  progress: (report) => event({ type: 'progress', ...report, build: [...report.build] }),
});

/** A process's end as a shell reports it: its code, or 128 plus the number of the signal that ended it. */
function exitCodeOf(status: ExitStatus): number {
  if (status.code !== null) return status.code;
  const signal = status.signal ? (constants.signals as Record<string, number>)[status.signal] : undefined;
  return 128 + (signal ?? 0);
}

/** Cursor home, then erase the display: a re-attached screen is drawn where it was, not below the user's prompt. */
const CLEAR_SCREEN = '\x1b[H\x1b[2J';

const stderrEvent = (bytes: Buffer | string): RunEvent => ({ type: 'stderr', data: Buffer.from(bytes).toString('base64') });

/**
 * Forwards a guest stream's output to the client at the client's pace: while the client is
 * behind, the stream is paused, its unread buffer fills, the mux stops granting the guest credit
 * and the guest's process blocks on its pipe. Host memory holds a window, not the flood.
 */
function relay(source: Readable, send: (chunk: Buffer) => boolean, client: OwnerStream): void {
  source.on('data', (chunk: Buffer) => {
    if (send(chunk)) return;
    source.pause();
    client.whenDrained(() => source.resume());
  });
}

/** Resolves once a guest stream takes input again, or is gone. */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
}

function workspaceOf(params: { readonly workspace?: string; readonly wholeHome: boolean }): ProjectFolderChoice | null {
  return params.workspace ? { path: params.workspace, wholeHome: params.wholeHome } : null;
}

/** A start the host refused, as the error code the client branches on. */
function asMethodError(err: unknown): unknown {
  if (err instanceof SessionStartRefused) return new MethodError(err.code, err.message);
  if (err instanceof MissingAgentKeyError) return new MethodError('missing_key', err.message);
  return err;
}

export function vmHostMethods(host: VmHost): MethodRegistry {
  return {
    'vm.list': () => host.live.map((s) => ({ id: s.id, name: s.name })),
    'vm.stop': defineMethod(VmStopParams, async ({ id }) => {
      const session = host.session(id);
      if (!session) throw new MethodError('not_running', `session ${id} is not running`);
      const end = await session.stop();
      return { id, status: end.status };
    }),
    'vm.run': defineMethod(VmRunParams, async (params, call) => {
      const stream = call.openStream({ onClose: () => void session?.stop() });
      let session: VmSession | null = null;
      void run(host, stream, params, (s) => (session = s));
      return { stream: stream.id };
    }),
    'vm.shell': defineMethod(VmShellParams, async (params, call) => {
      const existing = params.id ? host.session(params.id) : undefined;
      if (params.id && params.workspace)
        throw new MethodError('bad_params', 'a project folder is shared when a session starts; it cannot be given to an existing session');
      if (params.id && !existing && !params.resume) throw new MethodError('not_running', `session ${params.id} is not running`);
      if (params.agent && params.id)
        throw new MethodError('bad_params', 'an agent starts in a new session: leave out the session to attach to');
      try {
        if (params.agent) host.checkAgent(params.image, params.agent);
        if (params.id && !existing) host.checkResume(params.id, params.credentials);
      } catch (err) {
        throw asMethodError(err);
      }
      let attach: ReturnType<VmSession['attachPty']> | null = null;
      let attached!: () => void;
      const shellUp = new Promise<void>((resolve) => (attached = resolve));
      // Input the guest has not taken yet holds the client's further input (a pasted file, a pipe into capsem shell).
      const forward = (bytes: Buffer): Promise<void> | undefined =>
        attach && !attach.stream.write(bytes) ? drained(attach.stream) : undefined;
      const stream = call.openStream({
        // Input that comes while the VM boots (typed ahead, or piped in) waits for the shell: it used to be dropped.
        onData: (bytes) => (attach ? forward(bytes) : shellUp.then(() => forward(bytes))),
        onEvent: (event) => {
          const resize = VmResizeEvent.safeParse(event);
          if (resize.success) attach?.resize(resize.data.cols, resize.data.rows);
        },
        onClose: () => attach?.stream.destroy(),
      });
      void shell(host, stream, params, existing, (a) => {
        attach = a;
        attached();
      }).finally(attached);
      return { stream: stream.id };
    }),
  };
}

async function run(
  host: VmHost,
  stream: OwnerStream,
  params: z.output<typeof VmRunParams>,
  started: (s: VmSession) => void,
): Promise<void> {
  const event = (e: RunEvent): boolean => stream.event(e);
  let session: VmSession;
  try {
    session = await host.start(
      { name: params.name, image: params.image, command: params.argv, workspace: workspaceOf(params) },
      reporter(event),
    );
  } catch (err) {
    event(stderrEvent(`capsem: ${(err as Error).message}\n`));
    return stream.end(125);
  }
  started(session);
  event({ type: 'session', id: session.id, name: session.name });
  let ran: { readonly status: ExitStatus } | { readonly error: Error };
  try {
    const { stream: exec, result } = session.exec(params.argv);
    relay(exec, (c) => stream.write(c), stream);
    relay(exec.stderr, (c) => event(stderrEvent(c)), stream);
    ran = { status: await result };
    // Stderr paused for a slow client still holds the command's last words: send them before the stop.
    await finished(exec.stderr, { writable: false }).catch(() => undefined);
  } catch (err) {
    ran = { error: err as Error };
  }
  const end = await session.stop();
  // Whatever the command did, a session that could not be recorded is what the user must hear of.
  if (session.recording.failure()) {
    event(stderrEvent(`capsem: session ${session.id} crashed: ${end.reason}\n`));
    return stream.end(CANNOT_RECORD_EXIT);
  }
  if ('status' in ran) return stream.end(exitCodeOf(ran.status));
  event(stderrEvent(`capsem: ${ran.error.message}${end.reason ? ` (${end.reason})` : ''}\n`));
  stream.end(125);
}

async function shell(
  host: VmHost,
  stream: OwnerStream,
  params: z.output<typeof VmShellParams>,
  existing: VmSession | undefined,
  attached: (a: ReturnType<VmSession['attachPty']>) => void,
): Promise<void> {
  const event = (e: RunEvent): boolean => stream.event(e);
  let session = existing;
  if (!session) {
    try {
      session = params.id
        ? await host.resume(params.id, reporter(event), params.credentials)
        : await host.start(
            {
              name: params.name,
              image: params.image,
              command: ['shell'],
              workspace: workspaceOf(params),
              ...(params.agent ? { agent: params.agent } : {}),
            },
            reporter(event),
          );
    } catch (err) {
      event(stderrEvent(`capsem: ${(err as Error).message}\n`));
      return stream.end(125);
    }
  }
  event({ type: 'session', id: session.id, name: session.name });
  const pty = session.attachPty({ cols: params.cols, rows: params.rows });
  attached(pty);
  let exitCode = 0;
  pty.stream.on('exit', (status: ExitStatus) => (exitCode = exitCodeOf(status)));
  // The guest ends its side when the shell exits; ending ours closes the stream.
  const ended = new Promise<void>((resolve) => {
    pty.stream.once('end', () => resolve());
    pty.stream.once('close', () => resolve());
  });
  // Attached to a shell that has been running: its screen first, drawn from the top of a cleared one.
  const screen = await pty.screen;
  if (screen !== '') stream.write(Buffer.from(`${CLEAR_SCREEN}${screen}`));
  relay(pty.stream, (c) => stream.write(c), stream);
  await ended;
  pty.stream.end();
  // A session started for this shell ends with it; one the shell attached to keeps running.
  if (!existing) await session.stop();
  stream.end(exitCode);
}
