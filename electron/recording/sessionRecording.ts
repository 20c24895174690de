import { readFileSync, rmdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openSessionCredentials, type SessionCredentials } from '../credentials/credentialBroker.ts';
import { credentialRefOf, credentialRefSecret } from '../credentials/credentialRef.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { liveOtelExport } from '../otel/liveExport.ts';
import { sessionFactsOf } from '../otel/sessionFacts.ts';
import { openMainDb } from '../store/mainDb.ts';
import { ensureHome, ensurePrivateDir, sessionPaths, type CapsemHome } from '../store/paths.ts';
import { lossReport } from '../store/diskFailure.ts';
import { endFailedStart } from '../store/failedStart.ts';
import { getSession, registerSession, type SessionRecord } from '../store/registry.ts';
import { rollUpSession } from '../store/rollup.ts';
import { SessionWriter } from '../store/sessionWriter.ts';
import { caFiles, CertificateAuthority } from '../proxy/certificateAuthority.ts';
import { DEFAULT_BODY_CAP, type ConnectionOrigin } from '../proxy/exchange.ts';
import { startMitmProxy, type ProxyHandle, type ProxyOptions } from '../proxy/mitmProxy.ts';
import { PolicyStore } from '../policy/policy.ts';
import { parseResolveMap } from '../proxy/resolveMap.ts';
import { SessionRecorder } from './sessionRecorder.ts';

// A session's recording, for a VM (vm/vmSession.ts) and for `capsem record`'s local command alike:
// the session entered in main.db, its writer, the proxy in front of it, and at the end every row
// committed and the session rolled up. For a local command, also the environment that sends its
// traffic through the proxy and makes it trust the local CA.

const NODE_PRELOAD = fileURLToPath(new URL('../../resources/node-proxy-preload.cjs', import.meta.url));
/**
 * NODE_OPTIONS' way to load it: --require, which Node runs in every worker thread too (an --import
 * preload skips workers given their code as a string); quoted as Node parses NODE_OPTIONS.
 */
const NODE_PRELOAD_OPTION = `--require "${NODE_PRELOAD.replace(/["\\]/g, '\\$&')}"`;

/** The exit code of a command whose session could not be recorded any more: sysexits' EX_IOERR. */
export const CANNOT_RECORD_EXIT = 74;

export interface RecordingOptions {
  readonly name?: string | null;
  readonly command: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly origin?: ConnectionOrigin;
  readonly bodyCap?: number;
  /** How the session runs: 'record' (a local command, no sandbox) or 'vm'. */
  readonly mode?: 'record' | 'vm';
  /** A session already entered with registerRecordedSession. */
  readonly session?: SessionRecord;
  /** The CA, when the caller has loaded it already. */
  readonly ca?: CertificateAuthority;
  /** More of session_meta, written when the database opens (what a resume needs even after a crash). */
  readonly meta?: Readonly<Record<string, string>>;
  /** Where stored provider keys are kept; CAPSEM_HOME's, without a cipher, when not given. */
  readonly keyStore?: KeyStore;
}

/** How a recorded session ended, as main.db now says. */
export interface RecordingEnd {
  readonly status: 'stopped' | 'crashed';
  readonly reason: string | null;
}

export interface Recording {
  readonly session: SessionRecord;
  readonly proxy: ProxyHandle;
  readonly writer: SessionWriter;
  /** Runs the recording pipeline on the session's events: the proxy's exchanges, and what the VM adds. */
  readonly recorder: SessionRecorder;
  /** Resolves once every exchange that has ended so far is committed (an exchange ends after its client has the last byte). */
  flush(): Promise<void>;
  /** The environment for the recorded program: proxy, CA trust, the session id, and stand-ins in place of provider keys. */
  readonly childEnv: NodeJS.ProcessEnv;
  /** The session's provider keys: stand-ins for its programs (guestEnv), the real ones kept by the proxy's broker. */
  readonly credentials: SessionCredentials;
  /** The user's NO_PROXY entries, kept in childEnv: the program reaches these hosts directly, unrecorded. */
  readonly unrecordedHosts: readonly string[];
  /**
   * Why the session cannot be recorded any more (its session.db cannot be written), or null while
   * it can. From then on the proxy refuses every new request; whoever runs the session should stop it.
   */
  failure(): string | null;
  /** Resolves with that reason the moment recording fails; stays pending while it records. */
  readonly failed: Promise<string>;
  /**
   * Stops the proxy, commits every row (and `meta` into session_meta), and rolls the session up into
   * main.db. A session that lost rows to its disk ends crashed, whatever `end` says, with the loss as reason.
   */
  stop(end: { status: 'stopped' | 'crashed'; reason?: string; meta?: Readonly<Record<string, string>> }): Promise<RecordingEnd>;
}

/** Enters the session in main.db; done apart when the caller needs its id before the recording starts. */
export function registerRecordedSession(home: CapsemHome, options: Pick<RecordingOptions, 'name' | 'mode' | 'command'>): SessionRecord {
  ensureHome(home);
  const mainDb = openMainDb(home);
  try {
    return registerSession(mainDb, { name: options.name ?? null, mode: options.mode ?? 'record', command: options.command.join(' ') });
  } finally {
    mainDb.close();
  }
}

/** NO_PROXY and no_proxy as one list (tools disagree on which spelling wins), each entry once. */
function noProxyEntries(env: NodeJS.ProcessEnv): string[] {
  return [...new Set([env.NO_PROXY, env.no_proxy].flatMap((value) => (value ?? '').split(/[\s,]+/)).filter(Boolean))];
}

export async function startRecording(home: CapsemHome, options: RecordingOptions): Promise<Recording> {
  const env = options.env ?? process.env;
  ensureHome(home);
  const resolve = parseResolveMap(env.CAPSEM_RESOLVE);
  const upstreamCa = env.CAPSEM_UPSTREAM_CA_FILE ? [readFileSync(env.CAPSEM_UPSTREAM_CA_FILE, 'utf8')] : [];
  const ca = options.ca ?? (await CertificateAuthority.load(home));
  const policy = new PolicyStore(home);
  const session = options.session ?? registerRecordedSession(home, options);
  const stopWatching = policy.watch();
  const paths = sessionPaths(home, session.id);
  const bodyCap = options.bodyCap ?? DEFAULT_BODY_CAP;
  let opened: Awaited<ReturnType<typeof openRecorder>>;
  let credentials: SessionCredentials;
  try {
    credentials = openSessionCredentials({
      env,
      store: options.keyStore ?? new HomeKeyStore(home),
      settings: () => policy.policy.credentials,
      providers: () => policy.providers,
      credentialRefOf: credentialRefOf(credentialRefSecret(home)),
    });
    ensurePrivateDir(paths.dir);
    const meta = {
      ...options.meta,
      session_id: session.id,
      name: session.name ?? '',
      created_at: session.createdAt,
      mode: options.mode ?? 'record',
    };
    opened = await openRecorder(paths.dbPath, meta, bodyCap, policy, (writer, recorder) => ({
      ca,
      policy,
      resolve,
      upstreamCa,
      bodyCap,
      onExchange: (ex) => void recorder.record(ex),
      onLookup: (lookup) => recorder.event('lookup', lookup),
      frames: recorder,
      defaultOrigin: options.origin,
      refusal: () => writer.unwritable,
      backlog: () => (writer.needsDrain ? writer.drained() : null),
      credentials: credentials.broker,
    }));
  } catch (err) {
    stopWatching();
    const reason = `the session did not start: ${(err as Error).message}`;
    // A session entered here is ended here; one the caller entered is the caller's to end.
    if (!options.session) {
      endFailedStart(home, session.id, reason, { releaseName: true });
      try {
        rmdirSync(paths.dir);
      } catch {
        // Not empty: something other than a database this start could not make is kept.
      }
    }
    throw new Error(`${reason} (session ${session.name ? `${session.id}, ${session.name}` : session.id})`);
  }
  const { writer, recorder, proxy } = opened;
  const failed = new Promise<string>((resolve) => writer.once('unwritable', resolve));
  const caPath = caFiles(home).certPath;
  // The proxy's own address is not added: NO_PROXY lists destinations, and every client dials the
  // proxy it is given whatever the list says. A loopback entry would only let requests to local
  // servers (local models among them) skip the record.
  const unrecordedHosts = noProxyEntries(env);
  const nodeOptions = [env.NODE_OPTIONS, NODE_PRELOAD_OPTION].filter(Boolean).join(' ');
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    HTTPS_PROXY: proxy.url,
    HTTP_PROXY: proxy.url,
    https_proxy: proxy.url,
    http_proxy: proxy.url,
    NO_PROXY: unrecordedHosts.join(','),
    no_proxy: unrecordedHosts.join(','),
    NODE_EXTRA_CA_CERTS: caPath,
    SSL_CERT_FILE: caPath,
    REQUESTS_CA_BUNDLE: caPath,
    CURL_CA_BUNDLE: caPath,
    GIT_SSL_CAINFO: caPath,
    NODE_OPTIONS: nodeOptions,
    CAPSEM_SESSION_ID: session.id,
    // The program is recorded, not contained, but it is no more trusted with the keys than a guest.
    ...credentials.guestEnv,
  };
  // Exported as it is recorded when an OTLP endpoint is set; the guest's stand-ins are redacted from every span.
  const live = liveOtelExport(home, env);
  live?.watch(sessionFactsOf(session), Object.values(credentials.guestEnv));
  let stopped: Promise<RecordingEnd> | null = null;
  return {
    session,
    proxy,
    writer,
    recorder,
    childEnv,
    credentials,
    unrecordedHosts,
    flush: async () => {
      await recorder.settled();
      await writer.flush();
    },
    failure: () => writer.unwritable,
    failed,
    stop: (end) =>
      (stopped ??= (async () => {
        stopWatching();
        await proxy.close();
        await recorder.settled();
        await writer.close({
          ...end.meta,
          recorder_failed: String(recorder.failures),
          ...(recorder.lastFailure ? { recorder_last_failure: recorder.lastFailure } : {}),
          proxy_unauthenticated: String(proxy.unauthenticated),
        });
        // Known only now: the last rows may have been lost by the close itself.
        const lost = writer.unwritable;
        const ended: RecordingEnd = lost
          ? { status: 'crashed', reason: lossReport(lost, writer.stats.lost, writer.stats.lostByTable.net_events ?? 0) }
          : { status: end.status, reason: end.reason ?? null };
        const db = openMainDb(home);
        let record: SessionRecord | null;
        try {
          rollUpSession(home, db, session.id, ended);
          record = getSession(db, session.id);
        } finally {
          db.close();
        }
        if (live && record) await live.ended(sessionFactsOf(record));
        return ended;
      })()),
  };
}

/** The session's writer, its recorder and the proxy in front of them; whatever opened is closed again when a later part fails. */
async function openRecorder(
  dbPath: string,
  meta: Record<string, string>,
  bodyCap: number,
  policy: PolicyStore,
  proxyOptions: (writer: SessionWriter, recorder: SessionRecorder) => ProxyOptions,
) {
  const writer = await SessionWriter.open(dbPath, meta).catch((err: unknown) => {
    throw new Error(`cannot open its database ${dbPath}: ${(err as Error).message}`);
  });
  const recorder = new SessionRecorder(writer, bodyCap, () => policy.providers);
  try {
    return { writer, recorder, proxy: await startMitmProxy(proxyOptions(writer, recorder)) };
  } catch (err) {
    // Left open, the writer's thread would keep this process alive for nothing.
    await writer.close().catch(() => undefined);
    throw new Error(`its proxy did not start: ${(err as Error).message}`);
  }
}
