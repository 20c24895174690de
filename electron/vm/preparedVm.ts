import { randomBytes } from 'node:crypto';
import { renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CapsemHome } from '../store/paths.ts';
import { parseWarmUp, warmUpCommand, type WarmUp } from './agentWarmUp.ts';
import type { VmBackend, VmInstance } from './backend.ts';
import type { AgentName } from './codingAgents.ts';
import { SESSION_DISK_FILE } from './image/imagePlan.ts';
import { AgentMux, type Hello, type MuxStream } from './mux.ts';
import type { BootPlan } from './vmSession.ts';

// A VM booted before any session asks for it: an empty share (the session's folder is bound in on
// adoption, qemuBackend.ts), no config (so no session id, stand-in keys, proxy listener or policy:
// the agent gets those with its session's config), and its own run folder, disk and console log,
// which become the adopting session's. While it waits it reads the agents' files ahead, so the
// adopted agent's first start finds them in the guest's page cache rather than paging them out of
// the compressed image; then it starts the default agent once in a HOME of its own that it
// removes after (agentWarmUp.ts), so the adopted agent's first start is not its first after boot.
// The warm-up is over, its HOME gone, before the VM is handed to a session.

/** The agents' files to read ahead, in the guest's root; the default agent last, so it is the freshest in the page cache. */
export const READ_AHEAD_PATHS: readonly string[] = [
  '/opt/capsem/agents/node_modules/.bin/codex',
  '/opt/capsem/agents/node_modules/.bin/gemini',
  '/opt/capsem/agents/node_modules/.bin/node',
  // What `claude` runs (a symlink, which cat follows): Claude Code's native binary, about 400 MB.
  '/opt/capsem/agents/node_modules/.bin/claude',
];

export interface PrepareOptions {
  readonly home: CapsemHome;
  readonly backend: VmBackend;
  /** The image's plan, its session disk made in `dir`. */
  readonly plan: (dir: string) => Promise<BootPlan>;
  readonly memoryMiB: number;
  readonly cpus: number;
  readonly bootTimeoutMs?: number;
  readonly readAhead?: readonly string[];
  /** The agent started once after the read-ahead (null: none). */
  readonly warmUp?: AgentName | null;
}

/** How the read-ahead went: its time in the guest, or why it failed. */
export interface ReadAhead {
  readonly ms: number;
  readonly error: string | null;
}

/** How long a warm-up asked to stop has to say it removed its HOME before the spare is given up. */
const WARM_UP_STOP_MS = 10_000;

export class PreparedVm {
  private adopted = false;
  private readAheadDone: Promise<ReadAhead> = Promise.resolve({ ms: 0, error: null });
  private warmUpDone: Promise<WarmUp | null> = Promise.resolve(null);
  /** The warm-up once it has started in the guest. */
  private warmUpRun: Promise<WarmUp> | null = null;
  private warmUpStream: MuxStream | null = null;
  /** Set by quiesce(): no warm-up starts after it. */
  private stopping = false;
  private quiesced: Promise<boolean> | null = null;
  /** The guest said nothing of the warm-up is left. */
  private quiet = false;

  private constructor(
    readonly name: string,
    readonly runDir: string,
    readonly plan: BootPlan,
    readonly vm: VmInstance,
    readonly mux: AgentMux,
    readonly hello: Hello,
    /** From launch to the agent's hello. */
    readonly helloMs: number,
    private readonly serialLog: string,
    /** When it was ready to be adopted (Date.now()). */
    readonly readyAt: number,
  ) {}

  /** Boots a VM with an empty share, up to the agent's hello; then starts the read-ahead. */
  static async boot(options: PrepareOptions): Promise<PreparedVm> {
    const name = `spare-${randomBytes(6).toString('hex')}`;
    const runDir = join(options.home.runDir, 'vms', name);
    let vm: VmInstance | null = null;
    try {
      // The plan's disk lives in the run folder until a session adopts it (and moves it to its own folder).
      const plan = await options.plan(runDir);
      const serialLog = join(runDir, 'serial.log');
      const t0 = performance.now();
      vm = await options.backend.launch({
        kernel: plan.kernel,
        initrd: plan.initrd,
        cmdline: plan.cmdline,
        disks: plan.disks,
        emptyShare: true,
        memoryMiB: options.memoryMiB,
        cpus: options.cpus,
        runDir,
        serialLog,
      });
      const port = await vm.connectAgentPort(10_000);
      const mux = new AgentMux(port);
      mux.on('error', () => {});
      const timeout = options.bootTimeoutMs ?? (vm.accelerator.accel === 'tcg' ? 90_000 : 30_000);
      const exited = vm.exited.then((exit) =>
        Promise.reject(new Error(`the VM booted ahead ended before its agent said hello (${exit.stderr || exit.code})`)),
      );
      const hello = await Promise.race([mux.handshake(timeout), exited]);
      const prepared = new PreparedVm(name, runDir, plan, vm, mux, hello, performance.now() - t0, serialLog, Date.now());
      prepared.readAheadDone = prepared.readAhead(options.readAhead ?? READ_AHEAD_PATHS);
      const warmUp = options.warmUp === undefined ? 'claude' : options.warmUp;
      // After the read-ahead, whose files it would otherwise page in itself, from the compressed image.
      if (warmUp)
        prepared.warmUpDone = prepared.readAheadDone.then((r) =>
          r.error || prepared.stopping ? null : (prepared.warmUpRun = prepared.warmUp(warmUp)),
        );
      return prepared;
    } catch (err) {
      if (vm) await vm.kill();
      rmSync(runDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Reads `paths` to /dev/null in the guest; a missing one is skipped (another image's layout). */
  private readAhead(paths: readonly string[]): Promise<ReadAhead> {
    const t0 = performance.now();
    const script = 'for f in "$@"; do [ -e "$f" ] && cat "$f" > /dev/null; done; exit 0';
    return new Promise((resolve) => {
      try {
        const stream = this.mux.open({ kind: 'exec', argv: ['sh', '-c', script, 'capsem-read-ahead', ...paths], cwd: '/', stdin: false });
        stream.end();
        let err = '';
        stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
        stream.resume();
        const done = (): void => {
          const status = stream.exitStatus;
          resolve({
            ms: performance.now() - t0,
            error: status?.code === 0 ? null : err.trim() || `exit ${status?.code ?? status?.signal ?? 'unknown'}`,
          });
        };
        stream.on('close', done);
        stream.on('error', done);
      } catch (err) {
        resolve({ ms: 0, error: (err as Error).message });
      }
    });
  }

  /** Runs the agent's start once (agentWarmUp.ts); resolves when the guest says how it went, its HOME removed. */
  private warmUp(agent: AgentName): Promise<WarmUp> {
    return new Promise((resolve) => {
      try {
        const { argv, env } = warmUpCommand(agent);
        // stdin stays open: its end is how quiesce() stops the warm-up, so the guest removes what it made.
        const stream = this.mux.open({ kind: 'exec', argv, env, cwd: '/', stdin: true });
        this.warmUpStream = stream;
        let out = '';
        let err = '';
        stream.on('data', (c: Buffer) => (out += c.toString()));
        stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
        const done = (): void => {
          this.warmUpStream = null;
          resolve(parseWarmUp(out, err, stream.exitStatus?.code ?? null));
        };
        // Its output's end (after its exit), not 'close': with stdin open the stream closes only once the host ends it too.
        stream.on('end', () => {
          stream.end();
          done();
        });
        stream.on('error', done);
      } catch (err) {
        resolve({ outcome: 'failed', ms: 0, error: (err as Error).message, cleaned: false });
      }
    });
  }

  /** The warm-up's outcome once it has ended (null: none ran). */
  warmUpResult(): Promise<WarmUp | null> {
    return this.warmUpDone;
  }

  /**
   * Ends what the VM does while it waits, before a session gets it: a warm-up not started yet never
   * starts, one running is stopped, and the guest must say it removed the warm-up's HOME. False
   * when it did not within a moment: such a VM is not adopted. Asked again, the same answer.
   */
  quiesce(): Promise<boolean> {
    return (this.quiesced ??= (async () => {
      this.stopping = true;
      this.warmUpStream?.end();
      let timer: NodeJS.Timeout | undefined;
      const result = await Promise.race([
        this.warmUpRun ?? Promise.resolve(null),
        new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), WARM_UP_STOP_MS))),
      ]);
      clearTimeout(timer);
      this.quiet = result === null || (result !== 'late' && result.cleaned);
      return this.quiet;
    })());
  }

  /** The read-ahead's outcome once it has ended. */
  readAheadResult(): Promise<ReadAhead> {
    return this.readAheadDone;
  }

  /** Whether the VM still answers: a spare that does not is never adopted. */
  async alive(timeoutMs = 2000): Promise<boolean> {
    let ended = false;
    void this.vm.exited.then(() => (ended = true));
    await Promise.resolve();
    if (ended) return false;
    try {
      await this.mux.ping(timeoutMs);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Hands the VM to a session, once: its disk and console log move into the session's folder
   * (`sessionDir`, `serialLog`), and the plan returned names the disk there.
   */
  adopt(sessionDir: string, serialLog: string): BootPlan {
    if (this.adopted) throw new Error(`the VM booted ahead (${this.name}) was adopted already`);
    if (!this.quiet)
      throw new Error(`the VM booted ahead (${this.name}) is adopted only once quiesce() has said nothing of its warm-up is left`);
    this.adopted = true;
    moveFile(this.serialLog, serialLog);
    if (!this.plan.sessionDisk) return this.plan;
    const disk = join(sessionDir, SESSION_DISK_FILE);
    moveFile(this.plan.sessionDisk, disk);
    return { ...this.plan, sessionDisk: disk };
  }

  /** Resolves when its VM has ended. */
  get ended(): Promise<unknown> {
    return this.vm.exited;
  }

  /** Ends the VM and removes its run folder (an unadopted one's disk with it); it can never be adopted after. */
  async discard(): Promise<void> {
    this.adopted = true;
    this.stopping = true;
    this.mux.close();
    await this.vm.kill();
    rmSync(this.runDir, { recursive: true, force: true });
  }
}

/** A rename, never a copy: QEMU keeps writing to the file it opened, wherever its name now is. */
function moveFile(from: string, to: string): void {
  renameSync(from, to);
}
