import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { SessionId } from '../contract/ids.ts';
import type { AgentName } from '../contract/agents.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { ChangeContents } from '../recording/changeContents.ts';
import { ContentStore } from '../changes/contentStore.ts';
import {
  BASELINE_META_KEY,
  baselineSummary,
  baselineVersions,
  resumedVersions,
  scanWorkspace,
  type WorkspaceBaseline,
} from '../changes/workspaceBaseline.ts';
import type { FileVersion } from '../changes/workspaceEntry.ts';
import { openSessionDbReadOnly } from '../store/sessionDb.ts';
import { caFiles, CertificateAuthority } from '../proxy/certificateAuthority.ts';
import { registerRecordedSession, startRecording, type Recording } from '../recording/sessionRecording.ts';
import { openMainDb } from '../store/mainDb.ts';
import { endFailedStart } from '../store/failedStart.ts';
import { markRunning, type SessionRecord } from '../store/registry.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome, type SessionPaths } from '../store/paths.ts';
import type { RowOf } from '../store/sessionSchema.ts';
import type { DiskSpec, VmBackend, VmExit, VmInstance } from './backend.ts';
import { guestCipherOrder, guestCryptoEnv } from './guestCrypto.ts';
import { GuestActivity } from '../recording/guestActivity.ts';
import { execOutputTap } from '../recording/steps/commandRun.ts';
import { AgentMux, type ControlMessage, type ExitStatus, type MuxStream } from './mux.ts';
import type { PreparedVm } from './preparedVm.ts';
import { PtyTranscript } from './ptyTranscript.ts';
import { PtyView } from './ptyView.ts';
import { TerminalScreen } from './terminalScreen.ts';
import { vmCpuUse } from './vmCpuUse.ts';

// One VM per session, supervised: boot (with a timeout), heartbeat, crash detection, orderly stop,
// and the session's recording around it. The guest's connections reach the recording proxy over
// the agent's port; its file changes become fs_events, its commands exec_events, its terminal a
// transcript in the session folder, its console serial.log. Before the guest is given the workspace,
// the host records what it holds (the baseline); from then on each change's content is read as it
// is reported.

export const GUEST_PROXY_PORT = 3128;
/** Two vCPUs let the guest's TLS and the agent's relay run side by side (TCG runs a host thread per vCPU). */
export const DEFAULT_VM_CPUS = 2;
export const DEFAULT_VM_MEMORY_MIB = 1024;

/** What to boot for a session: the image's kernel, initrd and disks, prepared in its folder. */
export interface BootPlan {
  readonly kernel: string;
  readonly initrd: string;
  readonly cmdline: string;
  readonly disks: readonly DiskSpec[];
  /** Environment for every process the agent starts (CA bundle paths, for example). */
  readonly guestEnv: Readonly<Record<string, string>>;
  /** Where the agent sees the workspace: /workspace in a VM. */
  readonly guestWorkspace: string;
  /** The agent's proxy listener inside the guest; GUEST_PROXY_PORT unless the guest shares a network. */
  readonly guestProxyPort?: number;
  /** The session's writable disk: kept for a resumable (named) session, deleted when another ends. */
  readonly sessionDisk?: string;
  /** The image's hash, when it is a cached image: a VM booted ahead from another is not adopted. */
  readonly imageHash?: string;
}

/** A file the guest's home gets before the terminal's program first starts, relative to $HOME. */
export interface HomeFile {
  readonly path: string;
  readonly content: string;
}

/** What the session's terminal runs instead of a login shell (a coding agent, for one). */
export interface TerminalProgram {
  readonly argv: readonly string[];
  /** Added for this program alone to the guest's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Its settings, written before the session is handed out. */
  readonly homeFiles: readonly HomeFile[];
}

export interface VmSessionOptions {
  readonly home: CapsemHome;
  readonly name?: string | null;
  /** What the session is for, as the registry shows it. */
  readonly command: readonly string[];
  readonly backend: VmBackend;
  readonly plan: (paths: SessionPaths, caPemPath: string) => Promise<BootPlan>;
  /** The host's environment: CAPSEM_RESOLVE and CAPSEM_UPSTREAM_CA_FILE apply to the session's proxy. */
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** The stored keys the session's broker reads (the owner's, so it reads what the owner checked). */
  readonly keyStore?: KeyStore;
  readonly memoryMiB?: number;
  /** Virtual CPUs; DEFAULT_VM_CPUS unless said. */
  readonly cpus?: number;
  readonly bootTimeoutMs?: number;
  readonly heartbeatMs?: number;
  /** Progress lines while booting ("booting (TCG: ...)", "ready in 3.1 s"). */
  readonly onStatus?: (line: string) => void;
  /** The session is entered in main.db under this id (before its image is made and its VM booted). */
  readonly onRegistered?: (id: SessionId) => void;
  /** Boot an existing session again: same id, same session.db (its seq continues), same disk and workspace. */
  readonly resume?: SessionId;
  /** Recorded in session_meta, so a resume boots the same image. */
  readonly image?: string;
  /**
   * The user's project folder shared at /workspace (a real path, checked by checkProjectFolder);
   * recorded in session_meta as vm_workspace, so a resume shares it again. Without it the session
   * shares its own fresh folder, paths.workspaceDir.
   */
  readonly projectFolder?: string | null;
  /**
   * The terminal's program, a login shell unless said; made once the session's proxy has its
   * keys, from their stand-ins (Recording.credentials.guestEnv), the only keys the guest gets.
   */
  readonly terminal?: (standIns: Readonly<Record<string, string>>) => TerminalProgram;
  /** The coding agent `terminal` runs, kept in session_meta as vm_terminal_agent so a resume starts it again. */
  readonly agent?: AgentName;
  /**
   * A VM booted ahead (preparedVm.ts) to adopt instead of booting one: it gets its disk, folder,
   * session id, keys and policy now. `plan`, `memoryMiB` and `cpus` are then not used.
   */
  readonly prepared?: PreparedVm;
}

export interface SessionEnd {
  readonly status: 'stopped' | 'crashed';
  readonly reason: string | null;
}

export interface ExecOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stdin?: boolean;
}

export interface ExecResult extends ExitStatus {
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly durationMs: number;
}

export interface PtyAttachment {
  /** The shell's output from the moment `screen` was taken (read the screen first), keystrokes in. */
  readonly stream: PtyView;
  /** What the terminal shows as this attachment begins: screen and scrollback as escape sequences ('' for a new shell). */
  readonly screen: Promise<string>;
  resize(cols: number, rows: number): void;
}

/** The session's terminal across attachments: its transcript, the host's copy of its screen, and who is attached. */
interface SessionTerminal {
  readonly transcript: PtyTranscript;
  readonly screen: TerminalScreen;
  size: { cols: number; rows: number };
  view: PtyView | null;
  closed: boolean;
}

export class BootError extends Error {
  override name = 'BootError';
}

/** The guest image could not be built or checked, so there was nothing to boot. */
class ImageNotReady extends Error {
  override name = 'ImageNotReady';
}

function serialTail(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
}

export class VmSession {
  private state: 'running' | 'stopping' | 'ended' = 'running';
  private heartbeat: NodeJS.Timeout | null = null;
  private missedPings = 0;
  private terminal: SessionTerminal | null = null;
  private readonly activity: GuestActivity;
  private endResolve!: (end: SessionEnd) => void;
  /** Resolves once the session has ended and been rolled up, however it ended. */
  readonly ended: Promise<SessionEnd> = new Promise((r) => (this.endResolve = r));
  private ending: Promise<SessionEnd> | null = null;

  private constructor(
    readonly recording: Recording,
    readonly paths: SessionPaths,
    private readonly vm: VmInstance,
    private readonly mux: AgentMux,
    private readonly runDir: string,
    readonly boot: Readonly<Record<string, string>>,
    private readonly options: VmSessionOptions,
    private readonly sessionDisk: string | null,
    private readonly program: TerminalProgram | null,
    private readonly store: ContentStore | null,
    contents: ChangeContents | null,
  ) {
    this.activity = new GuestActivity(recording.recorder, contents);
  }

  get id(): SessionId {
    return this.recording.session.id;
  }

  get name(): string | null {
    return this.recording.session.name;
  }

  /** The VM's own process (QEMU), while it runs; undefined for a backend without one. */
  get vmPid(): number | undefined {
    return this.vm.pids[0];
  }

  get running(): boolean {
    return this.state === 'running';
  }

  /** For profiles (the download bench's hop table): the agent port's mux, its counters and guest streams, and the VM's processes. */
  get transport(): { readonly mux: AgentMux; readonly pids: readonly number[] } {
    return { mux: this.mux, pids: this.vm.pids };
  }

  static async start(options: VmSessionOptions): Promise<VmSession> {
    const status = options.onStatus ?? (() => {});
    const record = options.resume
      ? reopenSession(options.home, options.resume)
      : registerRecordedSession(options.home, { name: options.name ?? null, command: options.command, mode: 'vm' });
    const paths = sessionPaths(options.home, record.id);
    options.onRegistered?.(record.id);
    const prepared = options.prepared ?? null;
    const runDir = prepared ? prepared.runDir : join(options.home.runDir, 'vms', record.id);
    let recorded: PromiseSettledResult<Recording> | null = null;
    let store: ContentStore | null = null;
    let baselining: Promise<Baselined> = Promise.resolve(null);
    let launched: PromiseSettledResult<{ plan: BootPlan; vm: VmInstance }> | null = null;
    /** Ends the session crashed, with `reason` in main.db, and throws `message` to the caller. */
    const fail = async (reason: string, message: string): Promise<never> => {
      const launch = launched?.status === 'fulfilled' ? launched.value : null;
      if (prepared) await prepared.discard();
      else if (launch) await launch.vm.kill();
      rmSync(runDir, { recursive: true, force: true });
      // A disk made for a session that never ran holds nothing; a resumed session's holds its past.
      if (!options.resume && launch?.plan.sessionDisk) rmSync(launch.plan.sessionDisk, { force: true });
      if (recorded?.status === 'fulfilled') await recorded.value.stop({ status: 'crashed', reason });
      // A walk still under way writes to the store until it ends.
      await baselining;
      store?.close();
      endFailedStart(options.home, record.id, reason, { releaseName: !options.resume });
      const tail = serialTail(paths.serialLogPath);
      throw new BootError(`${message}${tail ? `\n--- last lines of ${paths.serialLogPath} ---\n${tail}` : ''}`);
    };
    const bootFailed = (err: unknown): Promise<never> => {
      const reason = err instanceof Error ? err.message : String(err);
      return fail(`boot failed: ${reason}`, `the VM did not boot: ${reason}`);
    };
    // Boot figures count from the launch: a first run's image build is its own stage, reported as such.
    let t0 = performance.now();
    const workspace = options.projectFolder ?? paths.workspaceDir;
    const meta: Record<string, string> = {
      ...(options.image ? { vm_image: options.image } : {}),
      ...(options.projectFolder ? { vm_workspace: options.projectFolder } : {}),
      ...(options.agent ? { vm_terminal_agent: options.agent } : {}),
    };
    let root: string;
    try {
      if (!options.projectFolder) ensurePrivateDir(paths.workspaceDir);
      root = realpathSync(workspace);
      store = openContentStore(options.home, status);
      if (store && !options.resume && isHomeFolder(root))
        status(
          'the whole home folder is shared: its changes are recorded without contents (a baseline of a home folder would walk every cache in it)',
        );
      else if (store) baselining = options.resume ? Promise.resolve(resumedBaseline(paths.dbPath)) : takeBaseline(root, store, status);
      // The CA must exist before the plan copies it into the guest's disk; loading makes it once.
      const ca = await CertificateAuthority.load(options.home);
      // The recording (writer thread, proxy) and the VM (image, launch) start side by side: the
      // proxy is needed only once the guest has booted.
      [recorded, launched] = await Promise.allSettled([
        startRecording(options.home, {
          session: record,
          ca,
          command: options.command,
          env: options.hostEnv ?? process.env,
          mode: 'vm',
          meta,
          keyStore: options.keyStore,
        }),
        (async () => {
          if (prepared) {
            const idle = Math.round((Date.now() - prepared.readyAt) / 1000);
            status(`using the VM booted ahead (idle ${idle} s)`);
            t0 = performance.now();
            // Its warm-up (agentWarmUp.ts) ends, its HOME removed, before the session's folder, id or keys reach it.
            if (!(await prepared.quiesce())) throw new Error(`the VM booted ahead (${prepared.name}) did not end its warm-up`);
            return { plan: prepared.adopt(paths.dir, paths.serialLogPath), vm: prepared.vm };
          }
          const plan = await options.plan(paths, caFiles(options.home).certPath).catch((err: unknown) => {
            throw new ImageNotReady(err instanceof Error ? err.message : String(err));
          });
          t0 = performance.now();
          const vm = await options.backend.launch({
            kernel: plan.kernel,
            initrd: plan.initrd,
            cmdline: plan.cmdline,
            disks: plan.disks,
            workspace,
            memoryMiB: options.memoryMiB ?? DEFAULT_VM_MEMORY_MIB,
            cpus: options.cpus ?? DEFAULT_VM_CPUS,
            runDir,
            serialLog: paths.serialLogPath,
          });
          return { plan, vm };
        })(),
      ]);
    } catch (err) {
      const reason = `the session did not start: ${(err as Error).message}`;
      return fail(reason, reason);
    }
    if (recorded.status === 'rejected') {
      const reason = (recorded.reason as Error).message;
      return fail(reason, reason);
    }
    if (launched.status === 'rejected') {
      // The image never got as far as a boot: say so, with the build's own words (and fix).
      if (launched.reason instanceof ImageNotReady)
        return fail(`image not ready: ${launched.reason.message}`, `the guest image is not ready: ${launched.reason.message}`);
      return bootFailed(launched.reason);
    }
    const recording = recorded.value;
    let program: TerminalProgram | null;
    try {
      program = options.terminal ? options.terminal(recording.credentials.guestEnv) : null;
    } catch (err) {
      const reason = `the session did not start: ${(err as Error).message}`;
      return fail(reason, reason);
    }
    const { plan } = launched.value;
    const booted = launched.value.vm;
    let contents: ChangeContents | null = null;
    try {
      const { mux, hello, helloMs } = prepared
        ? { mux: prepared.mux, hello: prepared.hello, helloMs: prepared.helloMs }
        : await (async () => {
            status(`booting the VM (${booted.accelerator.reason})`);
            const bootTimeout = options.bootTimeoutMs ?? (booted.accelerator.accel === 'tcg' ? 90_000 : 30_000);
            const mux = new AgentMux(await booted.connectAgentPort(10_000));
            mux.on('error', () => {});
            const hello = await Promise.race([
              mux.handshake(bootTimeout).catch((err: unknown) => {
                throw new Error(`${(err as Error).message} (${vmCpuUse(booted.pids[0], performance.now() - t0)})`);
              }),
              booted.exited.then((exit) => Promise.reject(vmExitError('before the agent said hello', exit, paths))),
            ]);
            return { mux, hello, helloMs: performance.now() - t0 };
          })();
      // The guest is given the workspace with its config: what the folder held is recorded by then.
      const baselined = await baselining;
      if (baselined && store) {
        if (baselined.baseline) writeBaselineRows(recording, baselined.baseline);
        recording.recorder.seedFileVersions(baselined.versions);
        contents = new ChangeContents(root, store, status);
      }
      // A VM booted ahead sees the session's folder only now, bound into its empty share under a random name.
      const workspaceSource = prepared ? await prepared.vm.bindIntoShare!(root) : null;
      const ready = mux.nextControl('ready', 30_000);
      mux.control({
        type: 'config',
        ...(workspaceSource ? { workspace_source: workspaceSource } : {}),
        time_ms: Date.now(),
        hostname: 'capsem',
        workspace: plan.guestWorkspace,
        proxy_port: plan.guestProxyPort ?? GUEST_PROXY_PORT,
        // Every program in the guest gets the stand-ins, as `capsem record` gives its command: a real key never leaves the host.
        env: {
          CAPSEM_SESSION_ID: recording.session.id,
          LANG: 'C.UTF-8',
          ...guestCryptoEnv(booted.accelerator.accel),
          ...plan.guestEnv,
          ...recording.credentials.guestEnv,
        },
      });
      const readyMessage = await Promise.race([
        ready,
        booted.exited.then((exit) => Promise.reject(vmExitError('before the agent was ready', exit, paths))),
      ]);
      if (typeof readyMessage.error === 'string') throw new Error(`the guest agent could not apply its config: ${readyMessage.error}`);
      const readyMs = performance.now() - t0;
      const boot = {
        ...bootFigures(readyMessage, helloMs, readyMs, hello.agent, booted.accelerator.accel),
        ...(prepared ? await spareFigures(prepared, readyMs) : {}),
      };
      status(`VM ready in ${(readyMs / 1000).toFixed(1)} s`);
      const session = new VmSession(
        recording,
        paths,
        booted,
        mux,
        runDir,
        boot,
        options,
        plan.sessionDisk ?? null,
        program,
        store,
        contents,
      );
      if (program?.homeFiles.length) await session.writeHomeFiles(program.homeFiles);
      session.watch();
      return session;
    } catch (err) {
      return bootFailed(err);
    }
  }

  /**
   * One command writes every file: each content travels in the command's environment, which
   * exec_events does not keep (a setting may carry part of a key), and never through a shell's
   * quoting. printenv ends each file with a newline.
   */
  private async writeHomeFiles(files: readonly HomeFile[]): Promise<void> {
    const env: Record<string, string> = {};
    files.forEach((file, i) => (env[`CAPSEM_HOME_FILE_${i}`] = file.content.replace(/\n$/, '')));
    const script =
      'cd "$HOME" || exit 1; i=0; for path in "$@"; do mkdir -p "$(dirname "$path")" && printenv "CAPSEM_HOME_FILE_$i" > "$path" || exit 1; i=$((i + 1)); done';
    const { stream, result } = this.exec(['sh', '-c', script, 'capsem-home-files', ...files.map((f) => f.path)], { env });
    let err = '';
    stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
    stream.resume();
    const { code } = await result;
    if (code !== 0)
      throw new Error(
        `the terminal program's settings (${files.map((f) => `~/${f.path}`).join(', ')}) could not be written in the guest: ${err.trim() || `exit ${code}`}`,
      );
  }

  /** Once every file change the guest has reported so far is a committed row, its content read: what a revert reads from. */
  async changesSettled(): Promise<void> {
    await this.activity.settled();
    await this.recording.writer.flush();
  }

  /** Records writes the host made in the shared folder (a revert): the guest reports none of them. */
  recordHostWrites(rows: readonly RowOf<'fs_events'>[]): void {
    for (const row of rows) this.recording.recorder.event('fs', { hostWrote: row });
  }

  /** Runs one command in the guest; its outcome becomes an exec_events row. */
  exec(argv: readonly string[], options: ExecOptions = {}): { stream: MuxStream; result: Promise<ExecResult> } {
    const started = new Date();
    const t0 = performance.now();
    const stream = this.mux.open({ kind: 'exec', argv, env: options.env, cwd: options.cwd, stdin: options.stdin ?? false });
    if (!options.stdin) stream.end();
    const out = execOutputTap();
    const err = execOutputTap();
    stream.on('data', (c: Buffer) => out.push(c));
    stream.stderr.on('data', (c: Buffer) => err.push(c));
    const result = new Promise<ExecResult>((resolve, reject) => {
      let settled = false;
      const finish = (status: ExitStatus | null, failure: Error | null): void => {
        if (settled) return;
        settled = true;
        const durationMs = Math.round(performance.now() - t0);
        if (this.state !== 'ended') this.activity.exec({ argv, cwd: options.cwd, started, status, durationMs, out, err, failure });
        if (status) resolve({ ...status, stdoutBytes: out.total, stderrBytes: err.total, durationMs });
        else reject(failure ?? new Error('the command ended without an exit status'));
      };
      stream.on('end', () => finish(stream.exitStatus, null));
      stream.on('error', (e) => finish(stream.exitStatus, e));
      stream.on('close', () =>
        finish(stream.exitStatus, stream.exitStatus ? null : new Error(stream.resetReason ?? 'the VM ended before the command did')),
      );
    });
    return { stream, result };
  }

  /**
   * Attaches to the guest's terminal program, its login shell unless said (started on first attach). One viewer at a time: the one
   * attached before ends, and the new one is shown the screen as it stands once that one's last
   * output is in. Output is kept for replay and in the host's copy of the screen.
   */
  attachPty(size: { cols: number; rows: number }, term = 'xterm-256color'): PtyAttachment {
    const terminal = (this.terminal ??= {
      transcript: new PtyTranscript(this.paths.ptyLogPath, size, term),
      screen: new TerminalScreen(size),
      size,
      view: null,
      closed: false,
    });
    const previous = terminal.view;
    const program = this.program;
    const source = this.mux.open({
      kind: 'pty',
      cols: size.cols,
      rows: size.rows,
      term,
      ...(program ? { argv: program.argv, env: program.env } : {}),
    });
    const resize = (cols: number, rows: number): void => {
      if (terminal.closed || (cols === terminal.size.cols && rows === terminal.size.rows)) return;
      terminal.size = { cols, rows };
      terminal.transcript.resize(cols, rows);
      terminal.screen.resize(cols, rows);
    };
    const screen = (previous ? previous.retire() : Promise.resolve()).then(() => {
      // The agent gave the shell this size on OPEN; what it prints from now on is drawn at it.
      resize(size.cols, size.rows);
      return terminal.screen.snapshot();
    });
    const record = (chunk: Buffer): Promise<void> | undefined => {
      if (terminal.closed) return undefined;
      terminal.transcript.output(chunk);
      return terminal.screen.write(chunk);
    };
    const view = new PtyView(source, record, screen);
    terminal.view = view;
    // A view whose viewer has gone still holds the shell's stream (and what it carries) until the next attach retires it.
    void view.released.then(() => {
      if (terminal.view === view) terminal.view = null;
    });
    return {
      stream: view,
      screen,
      resize: (cols, rows) => {
        if (terminal.view !== view || view.destroyed) return;
        resize(cols, rows);
        view.resize(cols, rows);
      },
    };
  }

  /** Orderly stop: the agent syncs and powers off; past `graceMs` the VM is killed. */
  stop(graceMs = 10_000): Promise<SessionEnd> {
    if (this.state !== 'running') return this.ending ?? this.ended;
    this.state = 'stopping';
    this.ending = (async () => {
      this.mux.control({ type: 'shutdown' });
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref());
      if ((await Promise.race([this.vm.exited, timer])) === 'timeout') await this.vm.kill();
      return this.finish({ status: 'stopped', reason: null });
    })();
    return this.ending;
  }

  private watch(): void {
    this.mux.on('stream', (stream) => {
      const meta = stream.meta;
      if (meta.kind !== 'net' && meta.kind !== 'dns') return void stream.destroy();
      const origin = { processName: meta.process ?? undefined, pid: meta.pid ?? undefined };
      if (meta.kind === 'dns') return this.recording.proxy.answerLookups(stream, origin, meta.transport);
      this.recording.proxy.adopt(stream, origin, guestCipherOrder(this.vm.accelerator.accel), meta.destination);
    });
    this.mux.on('fs', (changes) => this.activity.fs(changes));
    // A session that cannot be recorded must not run on unrecorded: the proxy already refuses the
    // guest's new connections; the VM is stopped in order and the session ends crashed with the loss.
    void this.recording.failed.then((reason) => {
      if (this.state !== 'running') return;
      this.options.onStatus?.(`stopping the VM: ${reason}`);
      void this.stop();
    });
    void this.vm.exited.then((exit) => {
      if (this.state === 'running') void this.crash(describeExit('QEMU exited', exit));
    });
    this.mux.on('close', () => {
      // QEMU ending closes the port too; give its exit a moment to be the reason given.
      if (this.state === 'running')
        setTimeout(() => this.state === 'running' && void this.crash('the agent connection closed'), 500).unref();
    });
    const every = this.options.heartbeatMs ?? 2000;
    this.heartbeat = setInterval(() => {
      this.mux.ping(Math.max(every * 2, 5000)).then(
        () => (this.missedPings = 0),
        () => {
          this.missedPings += 1;
          if (this.missedPings >= 3 && this.state === 'running')
            void this.crash(`the guest agent stopped answering (${this.missedPings} heartbeats missed)`);
        },
      );
    }, every);
    this.heartbeat.unref();
  }

  private async crash(reason: string): Promise<SessionEnd> {
    if (this.state !== 'running') return this.ending ?? this.ended;
    this.state = 'stopping';
    this.ending = (async () => {
      await this.vm.kill();
      return this.finish({ status: 'crashed', reason });
    })();
    return this.ending;
  }

  private async finish(end: SessionEnd): Promise<SessionEnd> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.mux.close();
    this.activity.endFsBatch();
    await this.activity.settled();
    if (this.terminal) {
      this.terminal.closed = true;
      this.terminal.transcript.close();
      this.terminal.screen.dispose();
    }
    rmSync(this.runDir, { recursive: true, force: true });
    if (this.sessionDisk && !this.recording.session.resumable) rmSync(this.sessionDisk, { force: true });
    const recorded = await this.recording.stop({ status: end.status, reason: end.reason ?? undefined, meta: this.boot });
    this.store?.close();
    this.state = 'ended';
    this.endResolve(recorded);
    return recorded;
  }
}

/** The versions a session's files start at, with the manifest to write when the baseline is new; null: contents are not recorded. */
type Baselined = { readonly versions: Map<string, FileVersion>; readonly baseline?: WorkspaceBaseline } | null;

/** The content store, or null when it cannot be opened (a full disk): the session runs, its changes recorded without content. */
function openContentStore(home: CapsemHome, status: (line: string) => void): ContentStore | null {
  try {
    return ContentStore.open(home);
  } catch (err) {
    status(`the workspace's contents cannot be kept (${(err as Error).message}): its changes are recorded without them`);
    return null;
  }
}

/** A new session's baseline; a folder that cannot be walked costs the contents, never the session. */
async function takeBaseline(root: string, store: ContentStore, status: (line: string) => void): Promise<Baselined> {
  try {
    const t0 = performance.now();
    const baseline = await scanWorkspace(root, store, { onStatus: status });
    status(`recorded the workspace: ${baseline.files.toLocaleString('en-US')} files in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return { versions: baselineVersions(baseline.manifest), baseline };
  } catch (err) {
    status(`the workspace could not be recorded (${(err as Error).message}): its changes are recorded without their content`);
    return null;
  }
}

/** The folder is the user's home folder (shared with --yes-whole-home, or the window's confirmation). */
function isHomeFolder(root: string): boolean {
  try {
    return root === realpathSync(homedir());
  } catch {
    return false;
  }
}

/** A resumed session keeps its baseline: its files start where its recording left off. */
function resumedBaseline(dbPath: string): Baselined {
  if (!existsSync(dbPath)) return null;
  const db = openSessionDbReadOnly(dbPath);
  try {
    const versions = resumedVersions(db);
    return versions ? { versions } : null;
  } finally {
    db.close();
  }
}

/** The manifest through the session's writer (its batches, its thread), the summary last: a baseline named in session_meta is whole. */
function writeBaselineRows(recording: Recording, baseline: WorkspaceBaseline): void {
  for (const file of baseline.manifest) recording.writer.append('workspace_files', file);
  recording.writer.append('session_meta', { key: BASELINE_META_KEY, value: baselineSummary(baseline) });
}

function describeExit(what: string, exit: VmExit): string {
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  return `${what} (${how})${exit.stderr ? `: ${exit.stderr.split('\n').slice(-3).join(' ')}` : ''}`;
}

function vmExitError(when: string, exit: VmExit, paths: SessionPaths): Error {
  return new Error(`${describeExit(`QEMU exited ${when}`, exit)}; see ${paths.serialLogPath}`);
}

function bootFigures(
  ready: ControlMessage,
  helloMs: number,
  readyMs: number,
  agent: string | undefined,
  accel: string,
): Record<string, string> {
  const stages = typeof ready.stages === 'object' && ready.stages !== null ? (ready.stages as Record<string, unknown>) : {};
  const figures: Record<string, string> = {
    vm_accelerator: accel,
    vm_agent: agent ?? '',
    vm_boot_hello_ms: helloMs.toFixed(0),
    vm_boot_ready_ms: readyMs.toFixed(0),
  };
  for (const [stage, ms] of Object.entries(stages)) if (typeof ms === 'number') figures[`vm_boot_${stage}`] = String(ms);
  return figures;
}

/** What a session that adopted a VM booted ahead records of it: which, its adoption's time, and what it did while it waited. */
async function spareFigures(prepared: PreparedVm, adoptMs: number): Promise<Record<string, string>> {
  const readAhead = await Promise.race([prepared.readAheadResult(), Promise.resolve(null)]);
  // Ended by now (adoption waits for it): how far it got, never what it printed.
  const warmUp = await Promise.race([prepared.warmUpResult(), Promise.resolve(undefined)]);
  return {
    vm_spare: prepared.name,
    vm_adopt_ms: adoptMs.toFixed(0),
    vm_spare_idle_ms: String(Date.now() - prepared.readyAt),
    vm_spare_read_ahead: readAhead ? (readAhead.error ? `failed: ${readAhead.error}` : `${readAhead.ms.toFixed(0)} ms`) : 'still reading',
    vm_spare_warm_up: warmUp === undefined ? 'not started' : warmUp === null ? 'none' : `${warmUp.outcome} after ${warmUp.ms} ms`,
  };
}

function reopenSession(home: CapsemHome, id: SessionId): SessionRecord {
  const db = openMainDb(home);
  try {
    return markRunning(db, id);
  } finally {
    db.close();
  }
}
