import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { isSessionId, type SessionId } from '../contract/ids.ts';
import { SCHEMA_VERSION } from '../contract/sessionEvent.ts';
import { searchBodies } from '../sessions/bodySearch.ts';
import { ChangeFeed } from '../sessions/changeFeed.ts';
import type { SessionEventStore } from '../sessions/sessionEventStore.ts';
import { SessionStores } from '../sessions/sessionStores.ts';
import { clipTimeline, readTimeline, type Timeline } from '../sessions/timeline.ts';
import { collectUsageRecords } from '../sessions/usageRecords.ts';
import { PolicyStore, userPolicyPath } from '../policy/policy.ts';
import { endAbandonedSessions } from '../store/abandonedSessions.ts';
import { eraseSession, SessionRunningError } from '../store/eraseSession.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { allSessions, getSession, type SessionRecord } from '../store/registry.ts';
import { resolveSession } from '../store/resolver.ts';
import { LiveEventFeed, LiveEventHub, type HubLimits } from './liveEvents.ts';
import { listenOnLoopback, type LoopbackListener, type Refusal } from '../platform/loopbackListener.ts';
import { pluginCatalog, recordingPipeline, type PolicyInUse } from './pipeline.ts';
import { SessionListReader } from './sessionList.ts';
import { answerUsage } from './usage.ts';

// The session events API (../shared/spec/session-api.md) on loopback, straight from the SQLite
// store. Routes take session ids only: names are resolved by the CLI and the app before they call.

export const DEFAULT_API_PORT = 47601;
const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 2000;
const PAGE_SLICE = 250;

export interface ApiOptions {
  readonly home: CapsemHome;
  readonly port?: number;
  /** The fourth DELETE guard: erasing is refused unless the owner allows it. */
  readonly allowDelete?: boolean;
  readonly heartbeatMs?: number;
  readonly pollMs?: number;
  /** SSE back-pressure: bytes a subscriber may hold unread, and how long it may take none before it is dropped. */
  readonly liveLimits?: Partial<HubLimits>;
  /** Serve every local account, not only CAPSEM_HOME's owner (the user asked, with --any-local-user). */
  readonly anyLocalUser?: boolean;
  /** Told of each connection refused because it is not the owner's. */
  readonly onRefused?: (refusal: Refusal) => void;
}

export interface ApiServer {
  readonly url: string;
  readonly port: number;
  readonly hub: LiveEventHub;
  readonly feed: LiveEventFeed;
  close(): Promise<void>;
}

const INDEX = `Capsem session events API
GET    /                                   this index
GET    /healthz                            liveness
GET    /v1/sessions                        sessions (?archived=true adds vacuumed ones, resident:false)
GET    /v1/sessions/{id}                   newest events; ?limit=N ?before=<seq> ?view=summary
GET    /v1/sessions/{id}/events/{seq}      one full event (?raw=1 adds the captured bytes)
GET    /v1/sessions/{id}/timeline          agents, turns, tools, jobs, returns and hosts on one time axis; ?from= ?to=
GET    /v1/sessions/{id}/search?q=         seqs of events whose bodies hold q
GET    /v1/events                          live events (SSE); ?session=<id>
GET    /v1/status                          live-tail counters
GET    /v1/usage                           usage over a window; ?window= ?resolution= ?group= ?session=
GET    /v1/pipeline                        the recording pipeline's steps and their config
GET    /v1/plugins                         the catalog of those steps and their actions
DELETE /v1/sessions                        erase every session but the running ones (when allowed)
DELETE /v1/sessions/{id}                   erase one ended session (when allowed)
`;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The Host header's name without its port; [::1] keeps its brackets. */
export function hostName(host: string | undefined): string {
  if (!host) return '';
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  return host.replace(/:\d+$/, '');
}

/** Guards every route against a web page reaching it through DNS rebinding or a cross-site request. */
function guardBrowserReach(req: IncomingMessage): void {
  if (req.headers.host === undefined) throw new HttpError(400, 'a Host header is required: localhost, 127.0.0.1 or ::1');
  if (!LOOPBACK_HOSTS.has(hostName(req.headers.host).toLowerCase()))
    throw new HttpError(403, 'forbidden: the Host header must be localhost, 127.0.0.1 or ::1');
  if (req.headers.origin !== undefined) throw new HttpError(403, 'forbidden: requests carrying an Origin header are refused');
}

/**
 * An error answered on the raw socket, for what never becomes a request: a request Node's parser
 * refuses, an upgrade, a CONNECT. The connection closes after it.
 */
function refuseOnSocket(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/** What a request the parser refused gets: its status, and a reason a person can act on. */
function parseFailure(err: NodeJS.ErrnoException): [number, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return [431, 'the request line and headers are too large (16 KiB at most); shorten the query string'];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'the request did not arrive in time'];
  return [400, `malformed HTTP request (${err.code ?? 'unreadable'})`];
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
  });
  res.end(payload);
}

function parseLimit(value: string | null): number {
  if (value === null || !/^\d+$/.test(value)) return DEFAULT_LIMIT;
  const n = Number(value);
  return n < 1 ? DEFAULT_LIMIT : Math.min(n, MAX_LIMIT);
}

/** A positive seq, or undefined for anything else: a bad cursor serves the tail, and a bad event seq is not found. */
function parseSeq(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n > 0 && Number.isSafeInteger(n) ? n : undefined;
}

/** Writes, waiting for the socket to drain when its buffer is full, so a page streams in bounded memory. */
async function write(res: ServerResponse, chunk: string): Promise<void> {
  if (!res.write(chunk))
    await new Promise<void>((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
}

/** The policy a session would start under now; a broken policy.json is described, not a 500, so the panes still show the pipeline. */
function policyInUse(home: CapsemHome): PolicyInUse {
  try {
    const store = new PolicyStore(home);
    return { document: store.policy, source: store.path };
  } catch (err) {
    return { source: userPolicyPath(home), error: (err as Error).message };
  }
}

export async function startApiServer(options: ApiOptions): Promise<ApiServer> {
  const { home } = options;
  const mainDb: Database.Database = openMainDb(home);
  const hub = new LiveEventHub(options.liveLimits);
  const feed = new LiveEventFeed(home, mainDb, hub, new ChangeFeed(home, options.pollMs ?? 200));
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const timelines = new Map<string, { newest: number; ended: boolean; timeline: Timeline; body: Buffer }>();
  const stores = new SessionStores(home);
  const listing = new SessionListReader(home, mainDb, stores);
  feed.start();

  function sessionStore(raw: string): { id: SessionId; record: SessionRecord | null; store: SessionEventStore } {
    const lower = raw.toLowerCase();
    if (!isSessionId(lower)) throw new HttpError(404, notAnId(raw));
    const id = lower;
    endAbandonedSessions(home, mainDb);
    const record = getSession(mainDb, id);
    const { dbPath } = sessionPaths(home, id);
    if (!existsSync(dbPath))
      throw new HttpError(
        404,
        record ? `session not found: the events of ${id} are no longer on disk (status ${record.status})` : 'session not found',
      );
    return { id, record, store: stores.get(id).store };
  }

  /**
   * Why a route's session is not found when it is no id: routes never act on a name or a shortened
   * id (a DELETE erases exactly the session it names), so the answer only says which id was meant.
   */
  function notAnId(raw: string): string {
    // Names are at most 64 characters: a longer segment is worth no search for close matches.
    if (raw.length > 64) return 'session not found';
    let id: SessionId;
    try {
      id = resolveSession(home, mainDb, raw);
    } catch {
      return 'session not found';
    }
    return getSession(mainDb, id)?.name === raw
      ? `session not found: "${raw}" is a display name; routes take session ids, so resolve the name first (it names ${id})`
      : `session not found: "${raw}" is the start of an id; routes take whole session ids (it starts ${id})`;
  }

  function forget(id: SessionId): void {
    stores.forget(id);
    listing.forget(id);
    timelines.delete(id);
  }

  async function eventsPage(res: ServerResponse, url: URL, rawId: string): Promise<void> {
    const { id, record, store } = sessionStore(rawId);
    const limit = parseLimit(url.searchParams.get('limit'));
    const before = parseSeq(url.searchParams.get('before'));
    const summary = url.searchParams.get('view') === 'summary';
    const bounds = store.bounds();
    const refs = store.page(before, limit);
    const whole = refs.length === bounds.total;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    await write(
      res,
      `{"id":${JSON.stringify(id)},"name":${JSON.stringify(record?.name ?? null)},"schemaVersion":${SCHEMA_VERSION}${summary ? ',"view":"summary"' : ''},"events":[`,
    );
    // Built and sent a slice at a time: memory follows the slice, not the page.
    let first = true;
    for (let i = 0; i < refs.length; i += PAGE_SLICE) {
      if (res.destroyed) return;
      const slice = refs.slice(i, i + PAGE_SLICE);
      const rows = store.rows(slice);
      let chunk = '';
      for (const ref of slice) {
        chunk += (first ? '' : ',') + JSON.stringify(store.event(ref, { full: !summary }, rows.get(ref.rowSeq)));
        first = false;
      }
      await write(res, chunk);
    }
    await write(res, ']');
    res.end(whole ? '}' : `,"totalEvents":${bounds.total},"oldestSeq":${bounds.oldest}}`);
  }

  function eventDetail(res: ServerResponse, url: URL, rawId: string, rawSeq: string): void {
    const { store } = sessionStore(rawId);
    const seq = parseSeq(rawSeq);
    const ref = seq === undefined ? undefined : store.at(seq);
    if (!ref) throw new HttpError(404, 'event not found');
    const raw = url.searchParams.get('raw') === '1';
    sendJson(res, 200, { ...store.event(ref, { full: true, raw }), schemaVersion: SCHEMA_VERSION });
  }

  function timeline(res: ServerResponse, url: URL, rawId: string): void {
    const { id, record, store } = sessionStore(rawId);
    const from = url.searchParams.get('from') ?? undefined;
    const to = url.searchParams.get('to') ?? undefined;
    for (const [name, value] of [
      ['from', from],
      ['to', to],
    ] as const) {
      if (value !== undefined && Number.isNaN(Date.parse(value))) throw new HttpError(400, `${name} must be an RFC 3339 time`);
    }
    // Cached until the newest event changes, or the session ends (its unanswered spans then provably stopped).
    const newest = store.newestEventSeq();
    const ended = record?.status !== 'running';
    let cached = timelines.get(id);
    if (!cached || cached.newest !== newest || cached.ended !== ended) {
      const computed = readTimeline(store, ended);
      cached = { newest, ended, timeline: computed, body: Buffer.from(JSON.stringify(computed)) };
      timelines.set(id, cached);
    }
    if (from === undefined && to === undefined) {
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': cached.body.length,
        'cache-control': 'no-store',
      });
      res.end(cached.body);
      return;
    }
    sendJson(res, 200, clipTimeline(cached.timeline, from, to));
  }

  async function search(req: IncomingMessage, res: ServerResponse, url: URL, rawId: string): Promise<void> {
    const q = url.searchParams.get('q') ?? '';
    if (q === '') throw new HttpError(400, 'q is required');
    const { store } = sessionStore(rawId);
    let gone = false;
    res.on('close', () => (gone = !res.writableFinished));
    req.socket.on('close', () => (gone = true));
    const result = await searchBodies(store, q, () => gone);
    if (result && !gone) sendJson(res, 200, { ...result, schemaVersion: SCHEMA_VERSION });
  }

  function liveTail(req: IncomingMessage, res: ServerResponse, url: URL): void {
    // Any string filters: an unknown id matches nothing, where a 404 would send a client into a reconnect loop.
    const only = url.searchParams.get('session')?.toLowerCase();
    // Subscribe before the first byte so no event can fall between the two.
    const unsubscribe = hub.subscribe(only, {
      write: (frame) => void res.write(frame),
      buffered: () => res.writableLength,
      close: () => res.destroy(),
    });
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    res.write(': ok\n\n');
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), heartbeatMs);
    req.socket.setNoDelay(true);
    res.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
    });
  }

  function erase(res: ServerResponse, rawId: string | undefined): void {
    if (!options.allowDelete)
      throw new HttpError(403, "forbidden: erasing sessions is not allowed by this server's configuration (capsem api --allow-delete)");
    let targets: SessionId[];
    let keptRunning = 0;
    endAbandonedSessions(home, mainDb);
    if (rawId === undefined) {
      const records = allSessions(mainDb);
      keptRunning = records.filter((r) => r.status === 'running').length;
      targets = records.filter((r) => r.status !== 'running').map((r) => r.id);
    } else {
      const lower = rawId.toLowerCase();
      if (!isSessionId(lower)) throw new HttpError(404, 'session not found');
      const record = getSession(mainDb, lower);
      const known = (record !== null && record.status !== 'erased') || existsSync(sessionPaths(home, lower).dir);
      if (!known) throw new HttpError(404, 'session not found');
      targets = [lower];
    }
    let sessions = 0;
    let archivedSessions = 0;
    let bytes = 0;
    for (const id of targets) {
      try {
        forget(id);
        const erased = eraseSession(home, mainDb, id);
        sessions += erased.resident;
        archivedSessions += erased.archived;
        bytes += erased.bytes;
      } catch (err) {
        if (err instanceof SessionRunningError) throw new HttpError(409, err.message);
        throw err;
      }
    }
    sendJson(res, 200, rawId === undefined ? { sessions, archivedSessions, bytes, keptRunning } : { sessions, archivedSessions, bytes });
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    guardBrowserReach(req);
    const target = req.url ?? '/';
    if (!target.startsWith('/')) throw new HttpError(400, 'request target must be a path');
    let url: URL;
    try {
      url = new URL(`http://localhost${target}`);
    } catch {
      throw new HttpError(400, 'malformed request target');
    }
    let parts: string[];
    try {
      parts = url.pathname
        .split('/')
        .filter(Boolean)
        .map((p) => decodeURIComponent(p));
    } catch {
      throw new HttpError(400, 'malformed percent-encoding in the path');
    }
    const method = req.method ?? 'GET';
    const only = (allowed: string[]): void => {
      if (!allowed.includes(method)) throw new HttpError(405, `method ${method} not allowed here`, { allow: allowed.join(', ') });
    };
    const path = url.pathname;
    if (path === '/') {
      only(['GET', 'HEAD']);
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(INDEX);
      return;
    }
    if (path === '/healthz') {
      only(['GET', 'HEAD']);
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('ok\n');
      return;
    }
    if (path === '/v1/status') {
      only(['GET']);
      return sendJson(res, 200, {
        sse: { subscribers: hub.size, dropped: hub.dropped, published: hub.published },
        connections: { refused: listener.refused },
      });
    }
    if (path === '/v1/events') {
      only(['GET']);
      return liveTail(req, res, url);
    }
    if (path === '/v1/usage') {
      only(['GET']);
      const answer = answerUsage(url.searchParams, new Date(), (since, session) => collectUsageRecords(mainDb, stores, since, session));
      return sendJson(res, answer.status, answer.body);
    }
    if (path === '/v1/pipeline') {
      only(['GET']);
      return sendJson(res, 200, recordingPipeline(policyInUse(home)));
    }
    if (path === '/v1/plugins') {
      only(['GET']);
      return sendJson(res, 200, pluginCatalog());
    }
    if (parts[0] === 'v1' && parts[1] === 'sessions') {
      if (parts.length === 2) {
        only(['GET', 'DELETE']);
        if (method === 'DELETE') return erase(res, undefined);
        return sendJson(res, 200, listing.list(url.searchParams.get('archived') === 'true'));
      }
      const id = parts[2]!;
      if (parts.length === 3) {
        only(['GET', 'DELETE']);
        if (method === 'DELETE') return erase(res, id);
        return eventsPage(res, url, id);
      }
      if (parts.length === 5 && parts[3] === 'events') {
        only(['GET']);
        return eventDetail(res, url, id, parts[4]!);
      }
      if (parts.length === 4 && parts[3] === 'timeline') {
        only(['GET']);
        return timeline(res, url, id);
      }
      if (parts.length === 4 && parts[3] === 'search') {
        only(['GET']);
        return search(req, res, url, id);
      }
    }
    throw new HttpError(404, 'no such route; GET / lists them');
  }

  /** Connections with an answer under way: a parse error there cannot be answered without corrupting it. */
  const answering = new WeakMap<Duplex, number>();
  // Without it, Node answers a request with no Host by itself, with a 400 and no reason.
  const server: Server = createServer({ requireHostHeader: false }, (req, res) => {
    const socket = req.socket;
    answering.set(socket, (answering.get(socket) ?? 0) + 1);
    res.on('close', () => answering.set(socket, (answering.get(socket) ?? 1) - 1));
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) {
        for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
        sendJson(res, err.status, { error: err.message });
      } else {
        sendJson(res, 500, { error: `internal error: ${(err as Error).message}` });
      }
    });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable || (answering.get(socket) ?? 0) > 0) return void socket.destroy();
    const [status, message] = parseFailure(err);
    refuseOnSocket(socket, status, message);
  });
  // Every route is plain HTTP; /v1/events is Server-Sent Events, which needs no upgrade.
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    refuseOnSocket(
      socket,
      400,
      'this API does not upgrade connections: every route is plain HTTP, and GET /v1/events is a Server-Sent Events stream',
    );
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    refuseOnSocket(socket, 405, 'this API is not a proxy: CONNECT is not served');
  });
  server.keepAliveTimeout = 5_000;
  let listener: LoopbackListener;
  try {
    listener = await listenOnLoopback(server, {
      port: options.port ?? DEFAULT_API_PORT,
      home: home.root,
      // Cortex clients send no token: who the peer is, is the only guard, so an unknown peer is refused.
      rule: options.anyLocalUser ? 'any-local-user' : 'owner',
      onRefused: options.onRefused,
    });
  } catch (err) {
    feed.stop();
    stores.close();
    mainDb.close();
    throw err;
  }
  const { port } = listener;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hub,
    feed,
    close: async () => {
      feed.stop();
      stores.close();
      await listener.close();
      mainDb.close();
    },
  };
}
