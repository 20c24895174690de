import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { WireRequestSchema, type EventName, type EventPayload, type HostCore, type WireMessage } from '../contract/appContract.ts';
import {
  BROWSER_IMPORT_MAX_BYTES,
  BROWSER_IMPORT_PATH,
  BROWSER_MAX_MESSAGE_BYTES,
  BROWSER_MODE_PATH,
  BROWSER_TOKEN_PARAM,
  BROWSER_WS_PATH,
} from '../contract/browserMode.ts';
import { listenOnLoopback, type Refusal } from '../platform/loopbackListener.ts';
import type { CapsemHome } from '../store/paths.ts';
import { asCallError } from './callFailure.ts';
import { handleImportUpload } from './importUpload.ts';
import { serveRenderer } from './rendererFiles.ts';
import { allowedPeers, checkHost, checkSocket, newToken } from './wsGuards.ts';

// Browser mode: the same renderer the Electron window loads, served on 127.0.0.1, and the same
// contract carried over a WebSocket at /ws as JSON text frames (WireRequest in, WireMessage out).
// Guards: the user who owns CAPSEM_HOME alone (loopbackListener.ts: another local account is
// refused before its first byte is read, where the kernel's socket table says who connects; where
// it cannot, the token below still guards), Host (against DNS rebinding), Origin, a per-run token; a message size cap; every
// request checked against the wire schema, then against the call's own params by the core.
// POST /import (importUpload.ts) takes a dropped file under the same guards. A request target
// that is not a path is refused with 400, and a handler that throws costs only its own request.

export interface BrowserServerOptions {
  readonly core: HostCore;
  readonly rendererDir: string;
  /** 0 (or undefined) picks a free port. */
  readonly port?: number;
  readonly token?: string;
  /** Why the app runs in a browser (served at /mode.json for the page to show). */
  readonly modeReason?: string;
  /** A Vite dev server on this port proxies /ws here: its Host and Origin are accepted too. */
  readonly devPort?: number;
  /** CAPSEM_HOME: its owner alone is served, and uploads to POST /import are staged in it; without it the route refuses and this process's user is served. */
  readonly home?: CapsemHome;
  /** Told of each connection refused because it is not the owner's. */
  readonly onRefused?: (refusal: Refusal) => void;
}

export interface BrowserServer {
  readonly port: number;
  readonly token: string;
  /** The address to open, token included. */
  readonly url: string;
  close(): Promise<void>;
}

/** A client that lets this much pile up unread is too slow to keep: it is closed, not buffered forever. */
const MAX_BUFFERED_BYTES = 32 << 20;
/**
 * Unsent bytes past which a page is behind: the terminal it shows waits (its pty is paused) until
 * the page has caught up, so a flood stops in the guest long before MAX_BUFFERED_BYTES.
 */
const PAGE_BACKLOG_BYTES = 1 << 20;

function securityHeaders(port: number, devPort?: number): Record<string, string> {
  const sockets = [port, ...(devPort ? [devPort] : [])].flatMap((p) => [`ws://127.0.0.1:${p}`, `ws://localhost:${p}`]).join(' ');
  return {
    // xterm.js injects a <style> element, so styles allow inline; scripts never do.
    'content-security-policy': [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      `connect-src 'self' ${sockets}`,
      "object-src 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
      "form-action 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // The page's URL carries the token: it must not leak to another site through Referer.
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/** Only a path (origin-form) names something here; anything else, or a target URL cannot parse, is refused. */
function targetUrl(target: string | undefined): URL | null {
  if (target === undefined || !target.startsWith('/')) return null;
  try {
    // Prefixed, not resolved against a base: "//host:port/" is a path here, not a second authority.
    return new URL(`http://127.0.0.1${target}`);
  } catch {
    return null;
  }
}

const BAD_TARGET = 'refused: the request target must be a path such as /index.html';

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${reason}\n`,
  );
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Sends a message; false once the page is more than PAGE_BACKLOG_BYTES behind. `flushed` runs when it has left. */
function send(ws: WebSocket, message: WireMessage, flushed?: () => void): boolean {
  if (ws.readyState !== ws.OPEN) return true;
  if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
    ws.close(1013, 'the page is not reading its messages; reload it');
    return true;
  }
  ws.send(JSON.stringify(message), flushed);
  return ws.bufferedAmount <= PAGE_BACKLOG_BYTES;
}

function serveConnection(ws: WebSocket, core: HostCore): void {
  // An event that finds the page behind answers with a promise; the flush that finds it caught
  // up (or the page going away) settles every such promise.
  const waiting: (() => void)[] = [];
  const settle = (): void => {
    for (const caughtUp of waiting.splice(0)) caughtUp();
  };
  const flushed = (): void => {
    if (ws.bufferedAmount <= PAGE_BACKLOG_BYTES) settle();
  };
  const unsubscribe = core.subscribe(<N extends EventName>(event: N, payload: EventPayload<N>) =>
    send(ws, { event, payload }, flushed) ? undefined : new Promise<void>((resolve) => waiting.push(resolve)),
  );
  ws.on('close', () => {
    unsubscribe();
    settle();
  });
  ws.on('error', () => ws.terminate());
  ws.on('message', (data: RawData, isBinary: boolean) => {
    try {
      answerMessage(ws, core, data, isBinary);
    } catch {
      ws.close(1011, 'the app failed on a message; reload the page');
    }
  });
}

function answerMessage(ws: WebSocket, core: HostCore, data: RawData, isBinary: boolean): void {
  if (isBinary) return ws.close(1003, 'send JSON text frames');
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString());
  } catch {
    return ws.close(1007, 'a message was not JSON');
  }
  const request = WireRequestSchema.safeParse(raw);
  if (!request.success) {
    const id = typeof (raw as { id?: unknown })?.id === 'number' ? (raw as { id: number }).id : null;
    if (id === null) return ws.close(1008, 'a message was not a request { id, call, params }');
    send(ws, {
      id,
      error: { code: 'bad_request', message: `a request is { id, call, params }: ${request.error.issues[0]?.message ?? 'invalid'}` },
    });
    return;
  }
  const { id, call, params } = request.data;
  core
    .handle(call, params)
    .then(
      (result) => send(ws, { id, result }),
      (err: unknown) => send(ws, { id, error: asCallError(err) }),
    )
    // An answer that cannot be sent (say, one JSON cannot carry) fails its call, not the app.
    .catch((err: unknown) =>
      send(ws, { id, error: { code: 'failed', message: `${call} answered something that could not be sent: ${messageOf(err)}` } }),
    );
}

export async function startBrowserServer(options: BrowserServerOptions): Promise<BrowserServer> {
  const token = options.token ?? newToken();
  const server: Server = createServer();
  const listener = await listenOnLoopback(server, {
    port: options.port ?? 0,
    home: options.home?.root,
    rule: 'owner-where-readable',
    onRefused: options.onRefused,
  });
  const { port } = listener;
  const { hosts, origins } = allowedPeers(port, options.devPort);
  const headers = securityHeaders(port, options.devPort);
  const wss = new WebSocketServer({ noServer: true, maxPayload: BROWSER_MAX_MESSAGE_BYTES, perMessageDeflate: false });
  const mode = JSON.stringify({ kind: 'browser', reason: options.modeReason ?? 'started in browser mode' });

  const answerRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const host = checkHost(req.headers, hosts);
    if (!host.ok) {
      res.writeHead(host.status, { ...headers, 'content-type': 'text/plain; charset=utf-8' }).end(`${host.reason}\n`);
      return;
    }
    const url = targetUrl(req.url);
    if (!url) {
      res.writeHead(400, { ...headers, 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end(`${BAD_TARGET}\n`);
      return;
    }
    if (url.pathname === BROWSER_IMPORT_PATH) {
      handleImportUpload(req, res, url, {
        core: options.core,
        home: options.home,
        origins,
        token,
        maxBytes: BROWSER_IMPORT_MAX_BYTES,
        headers,
      }).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { ...headers, 'content-type': 'application/json; charset=utf-8', connection: 'close' });
        res.end(JSON.stringify(asCallError(err)));
      });
      return;
    }
    if (url.pathname === BROWSER_MODE_PATH) {
      res.writeHead(200, { ...headers, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(mode);
      return;
    }
    serveRenderer(options.rendererDir, req, res, url.pathname, headers);
  };

  const answerUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const host = checkHost(req.headers, hosts);
    // A foreign Host gets no handshake at all: the page that sent it is not ours to talk to.
    if (!host.ok) return refuseUpgrade(socket, host.status, host.reason);
    const url = targetUrl(req.url);
    if (!url) return refuseUpgrade(socket, 400, BAD_TARGET);
    if (url.pathname !== BROWSER_WS_PATH) return refuseUpgrade(socket, 404, 'the socket is at /ws');
    const verdict = checkSocket(req.headers, url, origins, token);
    wss.handleUpgrade(req, socket, head, (ws) => {
      // A page cannot read an HTTP refusal of an upgrade, only a close: the reason says what to do.
      if (!verdict.ok) return ws.close(1008, verdict.reason);
      serveConnection(ws, options.core);
    });
  };

  // One request's failure is that request's answer: nothing a peer sends may stop the app.
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    try {
      answerRequest(req, res);
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      res
        .writeHead(500, { ...headers, 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
        .end(`internal error: ${messageOf(err)}\n`);
    }
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    try {
      answerUpgrade(req, socket, head);
    } catch {
      socket.destroy();
    }
  });

  return {
    port,
    token,
    url: `http://127.0.0.1:${port}/?${BROWSER_TOKEN_PARAM}=${token}`,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await listener.close();
    },
  };
}
