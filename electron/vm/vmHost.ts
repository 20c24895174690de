import { constants, homedir } from 'node:os';
import type { z } from 'zod';
import type { SessionId } from '../contract/ids.ts';
import { defineMethod, MethodError, type MethodRegistry, type OwnerStream } from '../owner/controlSocket.ts';
import { VmAgentParams, VmResizeEvent, VmRunParams, VmShellParams, VmStopParams, type AgentRequest, type RunEvent } from '../owner/vmMethods.ts';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { CANNOT_RECORD_EXIT } from '../proxy/recordingSession.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { rememberFolder } from '../store/recentFolders.ts';
import { getSession, type SessionRecord } from '../store/registry.ts';
import type { VmBackend } from './backend.ts';
import type { AgentName } from '../contract/agents.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { agentCredentials, agentStandIn, MissingAgentKeyError, type AgentCredentials } from './agentCredentials.ts';
import { agentTerminal, codingAgent } from './codingAgents.ts';
import type { ExitStatus } from './mux.ts';
import type { ImageKind, ImageProgress } from './image/guestImage.ts';
import { imageBootPlan, SESSION_DISK_FILE } from './image/imagePlan.ts';
import { cleanLeftovers } from './leftovers.ts';
import { checkProjectFolder } from './projectFolder.ts';
import { VmSession, type BootPlan, type TerminalProgram } from './vmSession.ts';
import { readVmSessionMeta } from './vmSessionMeta.ts';
import type { SessionPaths } from '../store/paths.ts';

// The owner's live VMs, keyed by session id, and the control-socket methods that reach them:
// vm.run (boot, run one command, stream its output, stop), vm.shell (a terminal, on a new
// session or attached to a live one), vm.stop and vm.list. The CLI uses these methods whether it
// is the owner or a client, so both take one path.

export type PlanFor = (kind: ImageKind, onProgress: (p: ImageProgress) => void) => (paths: SessionPaths, caPemPath: string) => Promise<BootPlan>;

export interface VmHostOptions {
  readonly home: CapsemHome;
  readonly backend: () => VmBackend;
  readonly plan?: PlanFor;
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** The stored keys agents are checked against and sessions' brokers read; CAPSEM_HOME's, without a cipher, unless said. */
  readonly keyStore?: KeyStore;
}

/** A folder to share at /workspace, and whether the user confirmed sharing one that holds their whole home. */
export interface ProjectFolderChoice {
  readonly path: string;
  readonly wholeHome: boolean;
}

/** Where a starting session's image progress and boot status go. */
export interface StartReporter {
  status(line: string): void;
  progress(report: ImageProgress): void;
  /** The session is entered under this id; its image and VM come next. */
  registered?(id: SessionId): void;
}

const reporter = (event: (e: RunEvent) => void): StartReporter => ({
  status: (line) => event({ type: 'status', line }),
  progress: (report) => event({ type: 'progress', ...report }),
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

export class VmHost {
  private readonly sessions = new Map<SessionId, VmSession>();
  private readonly idleWaiters: (() => void)[] = [];

  /** What the start-up cleanup found from a killed earlier run. */
  readonly leftovers: ReturnType<typeof cleanLeftovers>;

  private readonly keyStore: KeyStore;

  constructor(private readonly options: VmHostOptions) {
    this.leftovers = cleanLeftovers(options.home);
    this.keyStore = options.keyStore ?? new HomeKeyStore(options.home);
  }

  get live(): readonly VmSession[] {
    return [...this.sessions.values()];
  }

  /**
   * Boots a session. With `agent`, its terminal runs that coding agent (the registry shows its
   * command line); an agent that cannot start here (the minimal image, no key) is refused before
   * anything is registered.
   */
  async start(
    params: { name: string | null; image: ImageKind; command: readonly string[]; workspace?: ProjectFolderChoice | null; resume?: SessionId; agent?: AgentRequest },
    report: StartReporter,
  ): Promise<VmSession> {
    const agent = params.agent ? agentProgram(params.image, params.agent, this.keyStore) : undefined;
    // Checked before anything is registered: a folder that cannot be shared leaves no session behind.
    const projectFolder = params.workspace
      ? checkProjectFolder(params.workspace.path, { home: homedir(), capsemHome: this.options.home.root, wholeHomeConfirmed: params.workspace.wholeHome, confirmHint: 'add --yes-whole-home' })
      : null;
    const plan = (this.options.plan ?? ((kind, onProgress) => imageBootPlan(this.options.home, kind, onProgress)))(params.image, (p) => report.progress(p));
    const session = await VmSession.start({
      home: this.options.home, name: params.name, command: agent ? agent.argv : params.command, backend: this.options.backend(), plan,
      // The caller's key, taken from its environment, is for the session's broker: it wins over the owner's own (and over a stored one).
      hostEnv: agent ? { ...(this.options.hostEnv ?? process.env), ...agent.keys } : this.options.hostEnv,
      onStatus: (line) => report.status(line),
      onRegistered: (id) => report.registered?.(id),
      keyStore: this.keyStore,
      image: params.image, projectFolder, ...(params.resume ? { resume: params.resume } : {}), ...(agent ? { terminal: agent.terminal, agent: agent.name } : {}),
    });
    if (projectFolder) {
      try {
        rememberFolder(this.options.home, projectFolder);
      } catch {
        // The list only saves retyping a path; a session that started must not fail for it.
      }
    }
    this.sessions.set(session.id, session);
    void session.ended.then(() => {
      this.sessions.delete(session.id);
      if (this.sessions.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
    return session;
  }

  /**
   * Boots an ended session again on its own disk, workspace and session.db (its seq continues);
   * a session already running here is returned as it is, never booted twice.
   */
  async resume(id: SessionId, report: StartReporter, callerEnv: Readonly<Record<string, string | undefined>> = {}): Promise<VmSession> {
    const live = this.sessions.get(id);
    if (live) return live;
    const { record, image, projectFolder, agent } = resumableSession(this.options.home, id);
    // Sharing it was the user's choice when the session started; resuming does not ask again.
    const workspace = projectFolder ? { path: projectFolder, wholeHome: true } : null;
    // The agent starts again without the arguments it first had: a one-shot prompt (-p) is not sent twice.
    const terminal = agent ? { agent: { name: agent, credentials: resumeCredentials(agent, callerEnv, this.keyStore) } } : {};
    return this.start({ name: record.name, image, command: record.command ? [record.command] : ['resume'], workspace, resume: id, ...terminal }, report);
  }

  /** Resolves when no VM is running here (an owner CLI waits for the VMs it serves to others). */
  idle(): Promise<void> {
    return this.sessions.size === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.live.map((s) => s.stop()));
  }

  methods(): MethodRegistry {
    return {
      'vm.list': () => this.live.map((s) => ({ id: s.id, name: s.name })),
      'vm.stop': defineMethod(VmStopParams, async ({ id }) => {
        const session = this.sessions.get(id);
        if (!session) throw new MethodError('not_running', `session ${id} is not running`);
        const end = await session.stop();
        return { id, status: end.status };
      }),
      'vm.run': defineMethod(VmRunParams, async (params, call) => {
        const stream = call.openStream({ onClose: () => void session?.stop() });
        let session: VmSession | null = null;
        void this.run(stream, params, (s) => (session = s));
        return { stream: stream.id };
      }),
      'vm.shell': defineMethod(VmShellParams, async (params, call) => {
        const existing = params.id ? this.sessions.get(params.id) : undefined;
        if (params.id && params.workspace) throw new MethodError('bad_params', 'a project folder is shared when a session starts; it cannot be given to an existing session');
        if (params.id && !existing && !params.resume) throw new MethodError('not_running', `session ${params.id} is not running`);
        if (params.agent && params.id) throw new MethodError('bad_params', 'an agent starts in a new session: leave out the session to attach to');
        if (params.agent) agentProgram(params.image, params.agent, this.keyStore);
        if (params.id && !existing) {
          const { agent } = resumableSession(this.options.home, params.id);
          if (agent) resumeCredentials(agent, params.credentials, this.keyStore);
        }
        let attach: ReturnType<VmSession['attachPty']> | null = null;
        let attached!: () => void;
        const shellUp = new Promise<void>((resolve) => (attached = resolve));
        // Input the guest has not taken yet holds the client's further input (a pasted file, a pipe into capsem shell).
        const forward = (bytes: Buffer): Promise<void> | undefined => (attach && !attach.stream.write(bytes) ? drained(attach.stream) : undefined);
        const stream = call.openStream({
          // Input that comes while the VM boots (typed ahead, or piped in) waits for the shell: it used to be dropped.
          onData: (bytes) => (attach ? forward(bytes) : shellUp.then(() => forward(bytes))),
          onEvent: (event) => {
            const resize = VmResizeEvent.safeParse(event);
            if (resize.success) attach?.resize(resize.data.cols, resize.data.rows);
          },
          onClose: () => attach?.stream.destroy(),
        });
        void this.shell(stream, params, existing, (a) => {
          attach = a;
          attached();
        }).finally(attached);
        return { stream: stream.id };
      }),
    };
  }

  private async run(stream: OwnerStream, params: z.output<typeof VmRunParams>, started: (s: VmSession) => void): Promise<void> {
    const event = (e: RunEvent): boolean => stream.event(e);
    let session: VmSession;
    try {
      session = await this.start({ name: params.name, image: params.image, command: params.argv, workspace: workspaceOf(params) }, reporter(event));
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

  private async shell(stream: OwnerStream, params: z.output<typeof VmShellParams>, existing: VmSession | undefined, attached: (a: ReturnType<VmSession['attachPty']>) => void): Promise<void> {
    const event = (e: RunEvent): boolean => stream.event(e);
    let session = existing;
    if (!session) {
      try {
        session = params.id
          ? await this.resume(params.id, reporter(event), params.credentials)
          : await this.start({ name: params.name, image: params.image, command: ['shell'], workspace: workspaceOf(params), ...(params.agent ? { agent: params.agent } : {}) }, reporter(event));
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
}

/** A coding agent's session: its command line, its real key (for the broker alone) and its terminal program once the stand-ins exist. */
interface AgentProgram {
  readonly name: AgentName;
  readonly argv: readonly string[];
  readonly keys: AgentCredentials;
  readonly terminal: (standIns: Readonly<Record<string, string>>) => TerminalProgram;
}

/** What `agent` needs to start, or why it cannot, as a MethodError; `store` is the one the session's broker reads. */
function agentProgram(image: ImageKind, agent: AgentRequest, store: KeyStore): AgentProgram {
  const parsed = VmAgentParams.parse(agent);
  const label = codingAgent(parsed.name as AgentName).label;
  if (image !== 'agent') throw new MethodError('bad_params', `${label} is in the agent image only, not the ${image} image: start it on the agent image`);
  let keys: AgentCredentials;
  try {
    keys = agentCredentials(parsed.name, parsed.credentials, store);
  } catch (err) {
    if (err instanceof MissingAgentKeyError) throw new MethodError('missing_key', err.message);
    throw err;
  }
  return {
    name: parsed.name,
    argv: [codingAgent(parsed.name).command, ...parsed.args],
    keys,
    terminal: (standIns) => agentTerminal(parsed.name, parsed.args, agentStandIn(parsed.name, standIns)),
  };
}

/** The key of the agent a resumed session ran, from the resuming caller's environment (none when `store` holds it); missing_key when neither has it. */
function resumeCredentials(agent: AgentName, callerEnv: Readonly<Record<string, string | undefined>>, store: KeyStore): Record<string, string> {
  try {
    return { ...agentCredentials(agent, callerEnv, store) };
  } catch (err) {
    if (err instanceof MissingAgentKeyError) throw new MethodError('missing_key', err.message);
    throw err;
  }
}

function workspaceOf(params: { readonly workspace?: string; readonly wholeHome: boolean }): ProjectFolderChoice | null {
  return params.workspace ? { path: params.workspace, wholeHome: params.wholeHome } : null;
}

/** A session that can be booted again, the image it ran, the project folder it shared and the agent on its terminal; otherwise why not, as a MethodError. */
function resumableSession(home: CapsemHome, id: SessionId): { record: SessionRecord; image: ImageKind; projectFolder: string | null; agent: AgentName | null } {
  const db = openMainDb(home);
  let record: SessionRecord | null;
  try {
    record = getSession(db, id);
  } finally {
    db.close();
  }
  if (!record) throw new MethodError('unknown_session', `no session with id ${id}`);
  const label = record.name ? `${id} (${record.name})` : id;
  if (record.mode !== 'vm') throw new MethodError('not_resumable', `session ${label} did not run in a VM (${record.mode}), so there is nothing to boot again`);
  if (!record.resumable) throw new MethodError('not_resumable', `session ${label} was not kept for resuming: only named sessions keep their disk (capsem run --name N)`);
  const paths = sessionPaths(home, id);
  if (!existsSync(paths.dbPath)) throw new MethodError('not_resumable', `session ${label} has no session.db on disk any more`);
  const meta = readVmSessionMeta(paths.dbPath);
  // Sessions from before the image was kept ran the agent image.
  const image = meta.vm_image === 'minimal' ? 'minimal' : 'agent';
  if (image === 'agent' && !existsSync(join(paths.dir, SESSION_DISK_FILE))) throw new MethodError('not_resumable', `session ${label} has lost its disk (${join(paths.dir, SESSION_DISK_FILE)})`);
  const projectFolder = meta.vm_workspace ?? null;
  if (projectFolder !== null && !isFolder(projectFolder)) {
    throw new MethodError('workspace_gone', `session ${label} shared the project folder ${projectFolder}, which is gone; put the folder back there and resume again, or start a new session on another folder`);
  }
  return { record, image, projectFolder, agent: meta.vm_terminal_agent ?? null };
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
