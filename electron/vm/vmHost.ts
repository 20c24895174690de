import { homedir } from 'node:os';
import type { SessionId } from '../contract/ids.ts';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { rememberFolder } from '../store/recentFolders.ts';
import { getSession, type SessionRecord } from '../store/registry.ts';
import type { VmBackend } from './backend.ts';
import type { AgentName } from '../contract/agents.ts';
import {
  CODING_AGENT_IMAGES,
  CODING_AGENTS_ARE_IN,
  DEFAULT_IMAGE_KIND,
  guestImageKind,
  ImageKindSchema,
  type ImageKind,
} from '../contract/guestImages.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { agentCredentials, agentStandIn, type AgentCredentials } from './agentCredentials.ts';
import { AgentRequestSchema, type AgentRequest } from './agentRequest.ts';
import { agentTerminal, codingAgent } from './codingAgents.ts';
import type { ImageProgress } from './image/guestImage.ts';
import { hasSessionDisk, imageBootPlan, SESSION_DISK_FILE } from './image/imagePlan.ts';
import { cleanLeftovers } from './leftovers.ts';
import { SessionStartRefused } from './sessionStartRefused.ts';
import { checkProjectFolder } from './projectFolder.ts';
import { DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY_MIB, VmSession, type BootPlan, type TerminalProgram } from './vmSession.ts';
import { PreparedVm } from './preparedVm.ts';
import { SparePool } from './spareVm.ts';
import { agentBinary } from './agentBinary.ts';
import { cachedImageHash } from './image/guestImage.ts';
import { caFiles, CertificateAuthority } from '../proxy/certificateAuthority.ts';
import { readVmSessionMeta } from './vmSessionMeta.ts';
import { untilQuiet } from './vmCpuUse.ts';
import type { SessionPaths } from '../store/paths.ts';

// The owner's live VMs, keyed by session id: it starts, resumes and stops them, for the owner
// socket's vm.* methods (owner/vmHostMethods.ts) and the app's own calls alike.

export type PlanFor = (
  kind: ImageKind,
  onProgress: (p: ImageProgress) => void,
) => (paths: SessionPaths, caPemPath: string) => Promise<BootPlan>;

/** The image spares are booted from: the one the coding agents run on. */
const SPARE_IMAGE: ImageKind = CODING_AGENT_IMAGES[0]!.id;
/** A spare boots this long after a start has finished (the session's VM quiet), so it does not slow the new session's first moments. */
const SPARE_AFTER_START_MS = 3_000;
/** ...or this long after the start, when the session's VM keeps busy. */
const SPARE_AFTER_START_MAX_MS = 60_000;

export interface VmHostOptions {
  readonly home: CapsemHome;
  readonly backend: () => VmBackend;
  readonly plan?: PlanFor;
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** The stored keys agents are checked against and sessions' brokers read; CAPSEM_HOME's, without a cipher, unless said. */
  readonly keyStore?: KeyStore;
  /**
   * Keep one agent-image VM booted ahead for the next start to adopt (the app's choice, read at
   * each decision: Settings can change it); without it every start boots its own.
   */
  readonly spareVm?: () => boolean;
  /** Whether the agent image is built and current, so a spare can boot without building it; the image cache's word unless said. */
  readonly spareImageHash?: () => string | null;
  /** Where the pool's problems go (a spare that died or did not boot). */
  readonly onSpareProblem?: (message: string) => void;
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

export class VmHost {
  private readonly sessions = new Map<SessionId, VmSession>();
  private readonly idleWaiters: (() => void)[] = [];

  /** What the start-up cleanup found from a killed earlier run. */
  readonly leftovers: ReturnType<typeof cleanLeftovers>;

  private readonly keyStore: KeyStore;
  private readonly spares: SparePool<PreparedVm> | null;

  constructor(private readonly options: VmHostOptions) {
    this.leftovers = cleanLeftovers(options.home);
    this.keyStore = options.keyStore ?? new HomeKeyStore(options.home);
    const enabled = options.spareVm;
    this.spares = enabled
      ? new SparePool<PreparedVm>({
          enabled,
          boot: () => this.bootSpare(),
          fit: (spare) => !spare.plan.imageHash || spare.plan.imageHash === this.currentImageHash(),
          onProblem: (message) => options.onSpareProblem?.(message),
        })
      : null;
    // At launch, only when the image is already built: a first start builds it, and a spare follows that start.
    if (this.spares && enabled?.() && this.currentImageHash() !== null) this.spares.schedule(0);
  }

  /** The agent image's hash when it is built and current, else null. */
  private currentImageHash(): string | null {
    try {
      return (this.options.spareImageHash ?? (() => cachedImageHash(SPARE_IMAGE, { agentBinary: agentBinary() })))();
    } catch {
      return null;
    }
  }

  private async bootSpare(): Promise<PreparedVm> {
    // Always the cached image: a spare stands in for what imageBootPlan would boot.
    const plan = imageBootPlan(this.options.home, SPARE_IMAGE);
    // The CA must exist before the plan copies it into the spare's disk; loading makes it once.
    await CertificateAuthority.load(this.options.home);
    return PreparedVm.boot({
      home: this.options.home,
      backend: this.options.backend(),
      plan: (dir) => plan({ dir }, caFiles(this.options.home).certPath),
      memoryMiB: DEFAULT_VM_MEMORY_MIB,
      cpus: DEFAULT_VM_CPUS,
    });
  }

  private planFor(kind: ImageKind, onProgress: (p: ImageProgress) => void): ReturnType<PlanFor> {
    return (this.options.plan ?? ((k, progress) => imageBootPlan(this.options.home, k, progress)))(kind, onProgress);
  }

  /** Whether a VM booted ahead is waiting to be adopted. */
  get spareReady(): boolean {
    return this.spares?.ready ?? false;
  }

  /** The VM booted ahead that waits (for the bench's look at its memory and CPU), or null. */
  get waitingSpare(): PreparedVm | null {
    return this.spares?.waiting ?? null;
  }

  /** Turns the spare on or off at once (Settings): off discards the waiting one, on boots one when the image is built. */
  spareSettingChanged(): void {
    if (!this.spares) return;
    if (!this.options.spareVm?.()) void this.spares.drop();
    else if (this.currentImageHash() !== null) this.spares.schedule(0);
  }

  get live(): readonly VmSession[] {
    return [...this.sessions.values()];
  }

  /** The session of this id while it runs here. */
  session(id: SessionId): VmSession | undefined {
    return this.sessions.get(id);
  }

  /** Throws why `agent` cannot start on `image` here (the minimal image, no key), before anything is registered. */
  checkAgent(image: ImageKind, agent: AgentRequest): void {
    agentProgram(image, agent, this.keyStore);
  }

  /** Throws why the session `id` cannot be booted again, or its agent has no key, before anything is registered. */
  checkResume(id: SessionId, callerEnv: Readonly<Record<string, string | undefined>>): void {
    const { agent } = resumableSession(this.options.home, id);
    if (agent) resumeCredentials(agent, callerEnv, this.keyStore);
  }

  /**
   * Boots a session. With `agent`, its terminal runs that coding agent (the registry shows its
   * command line); an agent that cannot start here (the minimal image, no key) is refused before
   * anything is registered.
   */
  async start(
    params: {
      name: string | null;
      image: ImageKind;
      command: readonly string[];
      workspace?: ProjectFolderChoice | null;
      resume?: SessionId;
      agent?: AgentRequest;
    },
    report: StartReporter,
  ): Promise<VmSession> {
    const agent = params.agent ? agentProgram(params.image, params.agent, this.keyStore) : undefined;
    // Checked before anything is registered: a folder that cannot be shared leaves no session behind.
    const projectFolder = params.workspace
      ? checkProjectFolder(params.workspace.path, {
          home: homedir(),
          capsemHome: this.options.home.root,
          wholeHomeConfirmed: params.workspace.wholeHome,
          confirmHint: 'add --yes-whole-home',
        })
      : null;
    const plan = this.planFor(params.image, (p) => report.progress(p));
    // A new session of the spare's image adopts the VM booted ahead; a resumed one boots on its own disk.
    const prepared = this.spares && !params.resume && params.image === SPARE_IMAGE ? await this.spares.take() : null;
    const session = await VmSession.start({
      home: this.options.home,
      name: params.name,
      command: agent ? agent.argv : params.command,
      backend: this.options.backend(),
      plan,
      // The caller's key, taken from its environment, is for the session's broker: it wins over the owner's own (and over a stored one).
      hostEnv: agent ? { ...(this.options.hostEnv ?? process.env), ...agent.keys } : this.options.hostEnv,
      onStatus: (line) => report.status(line),
      onRegistered: (id) => report.registered?.(id),
      keyStore: this.keyStore,
      image: params.image,
      projectFolder,
      ...(params.resume ? { resume: params.resume } : {}),
      ...(agent ? { terminal: agent.terminal, agent: agent.name } : {}),
      ...(prepared ? { prepared } : {}),
    }).catch((err: unknown) => {
      this.spares?.schedule(SPARE_AFTER_START_MS);
      throw err;
    });
    // The next spare boots once this session's own start is over (its agent at its prompt, its VM
    // quiet): booting one beside it took the CPU the agent's start needed (30.8 s to the prompt
    // against 19.9 s, with a 2-core host under load).
    if (this.spares) {
      const spares = this.spares;
      void untilQuiet(session.vmPid, { maxMs: SPARE_AFTER_START_MAX_MS, ended: session.ended }).then(() =>
        spares.schedule(SPARE_AFTER_START_MS),
      );
    }
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
    return this.start(
      { name: record.name, image, command: record.command ? [record.command] : ['resume'], workspace, resume: id, ...terminal },
      report,
    );
  }

  /** Resolves when no VM is running here (an owner CLI waits for the VMs it serves to others). */
  idle(): Promise<void> {
    return this.sessions.size === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.live.map((s) => s.stop()), this.spares?.close()]);
  }
}

/** A coding agent's session: its command line, its real key (for the broker alone) and its terminal program once the stand-ins exist. */
interface AgentProgram {
  readonly name: AgentName;
  readonly argv: readonly string[];
  readonly keys: AgentCredentials;
  readonly terminal: (standIns: Readonly<Record<string, string>>) => TerminalProgram;
}

/** What `agent` needs to start, or why it cannot (SessionStartRefused, MissingAgentKeyError); `store` is the one the session's broker reads. */
function agentProgram(image: ImageKind, agent: AgentRequest, store: KeyStore): AgentProgram {
  const parsed = AgentRequestSchema.parse(agent);
  const label = codingAgent(parsed.name as AgentName).label;
  if (!guestImageKind(image).codingAgents)
    throw new SessionStartRefused(
      'bad_params',
      `${label} is in ${CODING_AGENTS_ARE_IN} only, not the ${guestImageKind(image).label}: start it on the ${CODING_AGENT_IMAGES[0]!.label}`,
    );
  return {
    name: parsed.name,
    argv: [codingAgent(parsed.name).command, ...parsed.args],
    keys: agentCredentials(parsed.name, parsed.credentials, store),
    terminal: (standIns) => agentTerminal(parsed.name, parsed.args, agentStandIn(parsed.name, standIns)),
  };
}

/** The key of the agent a resumed session ran, from the resuming caller's environment (none when `store` holds it); MissingAgentKeyError when neither has it. */
function resumeCredentials(
  agent: AgentName,
  callerEnv: Readonly<Record<string, string | undefined>>,
  store: KeyStore,
): Record<string, string> {
  return { ...agentCredentials(agent, callerEnv, store) };
}

/** A session that can be booted again, the image it ran, the project folder it shared and the agent on its terminal; otherwise why not, as SessionStartRefused. */
function resumableSession(
  home: CapsemHome,
  id: SessionId,
): { record: SessionRecord; image: ImageKind; projectFolder: string | null; agent: AgentName | null } {
  const db = openMainDb(home);
  let record: SessionRecord | null;
  try {
    record = getSession(db, id);
  } finally {
    db.close();
  }
  if (!record) throw new SessionStartRefused('unknown_session', `no session with id ${id}`);
  const label = record.name ? `${id} (${record.name})` : id;
  if (record.mode !== 'vm')
    throw new SessionStartRefused(
      'not_resumable',
      `session ${label} did not run in a VM (${record.mode}), so there is nothing to boot again`,
    );
  if (!record.resumable)
    throw new SessionStartRefused(
      'not_resumable',
      `session ${label} was not kept for resuming: only named sessions keep their disk (capsem run --name N)`,
    );
  const paths = sessionPaths(home, id);
  if (!existsSync(paths.dbPath)) throw new SessionStartRefused('not_resumable', `session ${label} has no session.db on disk any more`);
  const meta = readVmSessionMeta(paths.dbPath);
  // Sessions from before vm_image was kept ran the agent image, which is the default.
  const image = ImageKindSchema.catch(DEFAULT_IMAGE_KIND).parse(meta.vm_image);
  if (hasSessionDisk(image) && !existsSync(join(paths.dir, SESSION_DISK_FILE)))
    throw new SessionStartRefused('not_resumable', `session ${label} has lost its disk (${join(paths.dir, SESSION_DISK_FILE)})`);
  const projectFolder = meta.vm_workspace ?? null;
  if (projectFolder !== null && !isFolder(projectFolder)) {
    throw new SessionStartRefused(
      'workspace_gone',
      `session ${label} shared the project folder ${projectFolder}, which is gone; put the folder back there and resume again, or start a new session on another folder`,
    );
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
