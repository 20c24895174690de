import { readAppSettings, writeAppSettings } from '../store/appSettings.ts';
import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { ArchiveRejectedError } from '../archive/archiveFormat.ts';
import { importSession } from '../archive/importSession.ts';
import { CALLS, type CallName, type CallResult, type EventName, type EventPayload, type HostCore } from '../contract/appContract.ts';
import { isSessionId, type SessionId } from '../contract/ids.ts';
import { ChangeFeed } from '../sessions/changeFeed.ts';
import { searchColumns } from '../sessions/columnSearch.ts';
import { Conversations } from '../sessions/conversation.ts';
import { sessionCost } from '../sessions/cost.ts';
import { SessionStores } from '../sessions/sessionStores.ts';
import { revertSession } from '../sessions/sessionRevert.ts';
import { WorkspaceChanges } from '../sessions/workspaceChanges.ts';
import { ContentStore } from '../changes/contentStore.ts';
import { listSessions, summaryOf, type ListContext } from '../sessions/sessionSummary.ts';
import { windowTimeline } from '../sessions/windowTimeline.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { recentFolders } from '../store/recentFolders.ts';
import { getSession, renameSession, type SessionRecord } from '../store/registry.ts';
import { resolveSession } from '../store/resolver.ts';
import { checkProjectFolder } from '../vm/projectFolder.ts';
import { findKey } from '../credentials/credentialBroker.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import { checkKey, type KeyStore } from '../credentials/keyStore.ts';
import { PolicyStore } from '../policy/policy.ts';
import { agentCredentials } from '../vm/agentCredentials.ts';
import { readVmSessionMeta } from '../vm/vmSessionMeta.ts';
import type { VmHost } from '../vm/vmHost.ts';
import { asCallError, CallFailure } from './callFailure.ts';
import { EventDetails } from '../sessions/eventDetail.ts';
import { EventTables } from '../sessions/eventTable.ts';
import { LiveWatch } from './liveWatch.ts';
import { changeOtelSettings, otelSettings } from './otelSettings.ts';
import { exportForApp } from './sessionExport.ts';
import { SessionStarts } from './sessionStarts.ts';
import { recordedTranscript, recordedTranscriptPart, Terminals } from './terminals.ts';

// The host core behind the window, whichever door it comes through (Electron IPC or the
// browser-mode WebSocket). Every call's params are checked against the contract before anything
// runs, and every failure comes back as a CallFailure with a code, never as a crash of the host.
// Sessions are addressed by id; `sessions.resolve` is the one place a typed name becomes an id.

export interface AppCoreOptions {
  readonly home: CapsemHome;
  /** The VMs this process runs; null while another process owns CAPSEM_HOME (browse-only). */
  readonly vmHost?: VmHost | null;
  /** Why VMs cannot be started here, shown when the window asks to start or stop one. */
  readonly vmUnavailableReason?: string;
  readonly liveIntervalMs?: number;
  /** Check every result against the contract too (tests turn this on; a mismatch is a `bad_result`). */
  readonly checkResults?: boolean;
  /** Where a coding agent's key comes from (agentCredentials); the app's own environment unless said. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where keys the user adds in Settings are kept (the VM host's store, so sessions read them); CAPSEM_HOME's, without a cipher (keys.json, 0600), unless said. */
  readonly keyStore?: KeyStore;
  /** Why the spare VM is off for this run whatever Settings say (spareVmForcedOff), or null. */
  readonly spareVmOff?: string | null;
}

function sessionRecord(mainDb: Database.Database, id: SessionId): SessionRecord {
  const record = getSession(mainDb, id);
  if (!record) throw new CallFailure('unknown_session', `no session with id ${id}`);
  return record;
}

type Params<N extends CallName> = z.output<(typeof CALLS)[N]['params']>;
type Handlers = { [N in CallName]: (params: Params<N>) => CallResult<N> | Promise<CallResult<N>> };
type Listener = <N extends EventName>(name: N, payload: EventPayload<N>) => void | Promise<void>;

export class AppCore implements HostCore {
  private readonly mainDb: Database.Database;
  private readonly stores: SessionStores;
  private readonly tables = new EventTables();
  private readonly details = new EventDetails();
  private readonly conversations = new Conversations();
  private readonly changes = new WorkspaceChanges(this.conversations);
  /** The content store, opened on the first call that reads a change's content. */
  private contentStore: ContentStore | null = null;
  private readonly terminals: Terminals;
  private readonly starts: SessionStarts;
  private readonly watch: LiveWatch;
  private readonly listeners = new Set<Listener>();
  private vmHost: VmHost | null;
  private vmUnavailableReason: string;

  constructor(private readonly options: AppCoreOptions) {
    this.mainDb = openMainDb(options.home);
    this.stores = new SessionStores(options.home);
    this.vmHost = options.vmHost ?? null;
    this.vmUnavailableReason = options.vmUnavailableReason ?? 'this app does not run VMs';
    this.terminals = new Terminals({
      screen: (id, data) => this.emit('terminal.screen', { id, data }),
      output: (id, data) => this.emit('terminal.output', { id, data }),
      exit: (id, code) => this.emit('terminal.exit', { id, code }),
    });
    this.starts = new SessionStarts({
      entered: (id, progress) => {
        this.emit('session.starting', { id, state: 'progress', progress, message: null });
        this.sessionChanged(id);
      },
      progress: (id, progress) => this.emit('session.starting', { id, state: 'progress', progress, message: null }),
      ready: (id) => {
        this.emit('session.starting', { id, state: 'ready', progress: null, message: null });
        this.sessionChanged(id);
      },
      failed: (id, message) => {
        this.emit('session.starting', { id, state: 'failed', progress: null, message });
        this.sessionChanged(id);
      },
    });
    this.watch = new LiveWatch(
      { list: () => listSessions(this.listContext()), stores: this.stores, tables: this.tables },
      {
        changed: (session) => this.emit('session.changed', { session }),
        events: (id, kinds, lastSeq) => this.emit('session.events', { id, kinds, lastSeq }),
      },
      new ChangeFeed(options.home, options.liveIntervalMs ?? 500),
    );
  }

  /** Hands the core its VMs once this process owns CAPSEM_HOME (it may start browse-only). */
  setVmHost(host: VmHost | null, reason?: string): void {
    this.vmHost = host;
    if (reason) this.vmUnavailableReason = reason;
  }

  async handle(name: string, params: unknown): Promise<unknown> {
    if (!Object.hasOwn(CALLS, name))
      throw new CallFailure('bad_call', `unknown call "${name}"; the calls are ${Object.keys(CALLS).join(', ')}`);
    const call = name as CallName;
    const parsed = CALLS[call].params.safeParse(params ?? {});
    if (!parsed.success) throw new CallFailure('bad_params', `${call}: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}`);
    let result: unknown;
    try {
      result = await (this.handlers[call] as (p: unknown) => unknown)(parsed.data);
    } catch (err) {
      const e = asCallError(err);
      throw new CallFailure(e.code, e.message, e.candidates);
    }
    if (this.options.checkResults) {
      const checked = CALLS[call].result.safeParse(result);
      if (!checked.success)
        throw new CallFailure(
          'bad_result',
          `${call} answered outside the contract: ${z.prettifyError(checked.error).replace(/\n/g, '; ')}`,
        );
    }
    return result;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.watch.stop();
    };
  }

  /** One round of the live watch now (tests; the timer does the same every interval). */
  pollNow(): void {
    this.watch.tick();
  }

  close(): void {
    this.watch.stop();
    this.terminals.detachAll();
    this.stores.close();
    this.contentStore?.close();
    this.mainDb.close();
  }

  /** Sends an event to every transport; a promise while one of them is behind, settled once all have caught up. */
  private emit<N extends EventName>(name: N, payload: EventPayload<N>): Promise<void> | undefined {
    const behind: Promise<unknown>[] = [];
    for (const listener of this.listeners) {
      try {
        const caughtUp = listener(name, payload);
        if (caughtUp instanceof Promise) behind.push(caughtUp);
      } catch {
        // A transport that failed to send must not stop the others from getting the event.
      }
    }
    return behind.length === 0 ? undefined : Promise.allSettled(behind).then(() => undefined);
  }

  /** The list's row for a session now, not at the live watch's next round (it follows a start's turns). */
  private sessionChanged(id: SessionId): void {
    try {
      this.emit('session.changed', { session: summaryOf(this.listContext(), sessionRecord(this.mainDb, id)) });
    } catch {
      // The watch sends the row on its next round; a start must not fail for the list.
    }
  }

  /** Waits for a start under way; a start that failed is `start_failed`, saying why. */
  private async started(id: SessionId): Promise<void> {
    const outcome = await this.starts.outcomeOf(id);
    if (outcome && 'error' in outcome) throw new CallFailure('start_failed', outcome.error.message);
  }

  private liveIds(): Set<string> {
    return new Set((this.vmHost?.live ?? []).map((s) => s.id));
  }

  private listContext(): ListContext {
    return {
      home: this.options.home,
      mainDb: this.mainDb,
      live: this.liveIds(),
      starting: (id) => (isSessionId(id) ? this.starts.progressOf(id) : null),
    };
  }

  private liveSession(id: SessionId) {
    return this.vmHost?.live.find((s) => s.id === id && s.running);
  }

  private requireVms(): VmHost {
    if (!this.vmHost) throw new CallFailure('not_available', this.vmUnavailableReason);
    return this.vmHost;
  }

  private get keyStore(): KeyStore {
    return this.options.keyStore ?? new HomeKeyStore(this.options.home);
  }

  /** `provider` when new sessions know it (built in or named by the policy file), else `not_found`. */
  private knownProvider(provider: string): string {
    const ids = new PolicyStore(this.options.home).keyProviders.map((p) => p.id);
    if (!ids.includes(provider)) throw new CallFailure('not_found', `no provider "${provider}": one of ${ids.join(', ')}`);
    return provider;
  }

  /** The session's store, after checking main.db knows the id (so an unknown id is `unknown_session`). */
  private contents(): ContentStore {
    this.contentStore ??= ContentStore.open(this.options.home);
    return this.contentStore;
  }

  private session(id: SessionId) {
    sessionRecord(this.mainDb, id);
    return this.stores.get(id);
  }

  /** The session is over: a span still open in it provably stopped. */
  private ended(id: SessionId): boolean {
    return sessionRecord(this.mainDb, id).status !== 'running';
  }

  private readonly handlers: Handlers = {
    'sessions.list': () => listSessions(this.listContext()),
    'sessions.info': ({ id }) => summaryOf(this.listContext(), sessionRecord(this.mainDb, id)),
    'sessions.resolve': ({ query }) => ({ id: resolveSession(this.options.home, this.mainDb, query) }),
    'sessions.start': async ({ name, image, workspace, wholeHome, agent }) => {
      const vms = this.requireVms();
      // Checked here first for the window's wording of the confirmation; the VM host checks again.
      const folder =
        workspace === null
          ? null
          : checkProjectFolder(workspace, {
              home: homedir(),
              capsemHome: this.options.home.root,
              wholeHomeConfirmed: wholeHome,
              confirmHint: 'tick "Share my whole home folder"',
            });
      const choice = folder === null ? null : { path: folder, wholeHome };
      // The key comes from the environment the app was started in, else the stored keys; a missing one is refused before anything starts.
      const request =
        agent === 'shell'
          ? {}
          : { agent: { name: agent, credentials: agentCredentials(agent, this.options.env ?? process.env, this.keyStore) } };
      return {
        id: await this.starts.begin((report) => vms.start({ name, image, command: ['shell'], workspace: choice, ...request }, report)),
      };
    },
    'folders.recent': () => recentFolders(this.options.home),
    'keys.list': () => {
      const env = this.options.env ?? process.env;
      const providers = new PolicyStore(this.options.home).keyProviders.map((p) => {
        const found = findKey(p, env, this.keyStore);
        const source = found ? found.source.kind : this.keyStore.locked(p.id) ? ('locked' as const) : ('none' as const);
        return { id: p.id, source, variable: found?.source.kind === 'env' ? found.source.variable : null };
      });
      return { store: this.keyStore.description, providers };
    },
    'keys.set': ({ provider, key }) => {
      let checked: string;
      try {
        checked = checkKey(key);
      } catch (err) {
        throw new CallFailure('bad_params', (err as Error).message);
      }
      this.keyStore.set(this.knownProvider(provider), checked);
      return {};
    },
    'keys.remove': ({ provider }) => ({ removed: this.keyStore.remove(this.knownProvider(provider)) }),
    'settings.get': () => ({ spareVm: readAppSettings(this.options.home).spareVm, spareVmOff: this.options.spareVmOff ?? null }),
    'settings.set': ({ spareVm }) => {
      const settings = writeAppSettings(this.options.home, spareVm === undefined ? {} : { spareVm });
      this.vmHost?.spareSettingChanged();
      return { spareVm: settings.spareVm, spareVmOff: this.options.spareVmOff ?? null };
    },
    'otel.get': () => otelSettings(this.options.home, this.options.env ?? process.env),
    'otel.set': (change) => changeOtelSettings(this.options.home, this.options.env ?? process.env, change),
    'sessions.stop': async ({ id }) => {
      sessionRecord(this.mainDb, id);
      // A session still starting is stopped once it runs; one whose start failed has ended already.
      await this.starts.outcomeOf(id);
      const record = sessionRecord(this.mainDb, id);
      const live = this.liveSession(id);
      if (!live) {
        if (record.status === 'running' && !this.vmHost) throw new CallFailure('not_available', this.vmUnavailableReason);
        throw new CallFailure('not_running', `session ${id} is not running here (its status is ${record.status})`);
      }
      const end = await live.stop();
      return { status: end.status };
    },
    'sessions.resume': async ({ id }) => {
      sessionRecord(this.mainDb, id);
      if (this.starts.isStarting(id)) return { id };
      const vms = this.requireVms();
      // Like sessions.start, the agent the session ran is refused before anything boots when the app has no key for it.
      const agent = this.liveSession(id) ? undefined : readVmSessionMeta(sessionPaths(this.options.home, id).dbPath).vm_terminal_agent;
      const credentials = agent ? agentCredentials(agent, this.options.env ?? process.env, this.keyStore) : {};
      return { id: await this.starts.begin((report) => vms.resume(id, report, credentials)) };
    },
    'sessions.rename': ({ id, name }) => {
      sessionRecord(this.mainDb, id);
      return summaryOf(this.listContext(), renameSession(this.mainDb, id, name));
    },
    'sessions.import': async ({ path }) => {
      if (!isAbsolute(path)) throw new CallFailure('bad_params', `sessions.import: the path must be absolute, not "${path.slice(0, 200)}"`);
      if (!existsSync(path)) throw new CallFailure('not_found', `no file at ${path}`);
      try {
        const imported = await importSession(this.options.home, this.mainDb, path);
        return { id: imported.id, name: imported.name };
      } catch (err) {
        if (err instanceof ArchiveRejectedError) throw new CallFailure('bad_archive', err.message);
        throw err;
      }
    },
    'sessions.export': ({ id, format }) => {
      sessionRecord(this.mainDb, id);
      return exportForApp(this.options.home, this.mainDb, id, format);
    },
    'events.page': ({ id, kind, offset, limit, filter }) => this.tables.page(this.session(id), kind, offset, limit, filter),
    'events.detail': ({ id, kind, seq }) => this.details.detail(this.session(id), kind, seq),
    'events.body': ({ id, eventId, direction, offset, length }) => this.details.body(this.session(id), eventId, direction, offset, length),
    'sessions.timeline': ({ id }) => windowTimeline(this.session(id), this.ended(id)),
    'sessions.conversation': ({ id, offset, limit }) => this.conversations.page(this.session(id), this.ended(id), offset, limit),
    'sessions.conversationFind': ({ id, seq, kind }) => ({ index: this.conversations.find(this.session(id), this.ended(id), seq, kind) }),
    'sessions.conversationText': ({ id, source, rowId, offset, length }) =>
      this.conversations.text(this.session(id), source, rowId, offset, length),
    'sessions.changes': ({ id, offset, limit, turn, path }) =>
      this.changes.page(this.session(id), this.ended(id), this.contents(), { offset, limit, turn, path }),
    'sessions.diff': ({ id, target }) => this.changes.diff(this.session(id), this.ended(id), this.contents(), target),
    'sessions.revert': async ({ id, target }) => {
      const ended = this.ended(id);
      const live = ended ? undefined : this.liveSession(id);
      const result = await revertSession(
        { home: this.options.home, id, session: this.session(id), ended, changes: this.changes, store: this.contents(), live },
        target,
      );
      if (result.restored.length > 0) this.sessionChanged(id);
      return result;
    },
    'sessions.cost': ({ id }) => sessionCost(this.session(id)),
    'sessions.search': ({ id, query }) => searchColumns(this.session(id), query),
    'terminal.attach': async ({ id, size }) => {
      sessionRecord(this.mainDb, id);
      await this.started(id);
      const live = this.liveSession(id);
      if (live) {
        await this.terminals.attachLive(live, size);
        return { live: true, transcript: null };
      }
      return { live: false, transcript: await recordedTranscript(sessionPaths(this.options.home, id).ptyLogPath) };
    },
    'terminal.replay': ({ id, from }) => {
      sessionRecord(this.mainDb, id);
      return recordedTranscriptPart(sessionPaths(this.options.home, id).ptyLogPath, from);
    },
    'terminal.input': ({ id, data }) => {
      this.terminals.input(id, data);
      return {};
    },
    'terminal.ack': ({ id, chars }) => {
      this.terminals.drawn(id, chars);
      return {};
    },
    'terminal.resize': ({ id, size }) => {
      this.terminals.resize(id, size.cols, size.rows);
      return {};
    },
    'terminal.detach': ({ id }) => {
      this.terminals.detach(id);
      return {};
    },
    'live.subscribe': ({ id }) => {
      if (id !== null) {
        sessionRecord(this.mainDb, id);
        this.watch.follow(id);
      }
      this.watch.start();
      return {};
    },
  };
}
