import { statSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { peerOf, type Endpoint, type PeerLookup } from './socketTable.ts';

// A loopback listener that hands an HTTP server only the connections of the user who owns
// CAPSEM_HOME. Loopback alone lets in every account on the machine, and the session events API
// (which Cortex clients call with no token) would then serve any of them every session. Each
// connection is checked as it is accepted, before a byte of it is read, against the kernel's
// socket table (socketTable.ts) and CAPSEM_HOME's owner as they are at that moment: nothing is
// kept from one connection to the next, since a port or a folder can change hands between them.

/**
 * Who is served. `owner`: CAPSEM_HOME's owner alone, and no one where the socket table cannot be
 * read (the API, which has no other guard). `owner-where-readable`: the owner, and anyone where
 * the table cannot be read (browser mode, whose per-run token still guards). `any-local-user`:
 * no check, as the user asked.
 */
export type PeerRule = 'owner' | 'owner-where-readable' | 'any-local-user';

export type Admission =
  | { readonly admit: true }
  /** reason null: the peer is gone, so the connection is closed with no answer. */
  | { readonly admit: false; readonly reason: string | null; readonly uid?: number };

/** The home owner's uid, or why it cannot be had. */
export type HomeOwner = { readonly uid: number } | { readonly error: string };

/** CAPSEM_HOME's owner; without a home, the user running this process. */
export function homeOwner(home: string | undefined): HomeOwner {
  if (home === undefined) {
    const uid = process.getuid?.();
    return uid === undefined ? { error: 'this system has no user ids' } : { uid };
  }
  try {
    return { uid: statSync(home).uid };
  } catch (err) {
    return { error: `CAPSEM_HOME (${home}) cannot be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})` };
  }
}

/** Whether a connection from `peer` is served, and if not, the reason it is told. */
export function admitPeer(peer: PeerLookup, owner: HomeOwner, rule: Exclude<PeerRule, 'any-local-user'>): Admission {
  if (peer.kind === 'gone') return { admit: false, reason: null };
  if ('error' in owner) return { admit: false, reason: `refused: ${owner.error}, so its owner, the one user served here, is unknown` };
  if (peer.kind === 'unknown')
    return rule === 'owner-where-readable'
      ? { admit: true }
      : {
          admit: false,
          reason: `refused: ${peer.reason}, so the user connecting cannot be told from the owner of CAPSEM_HOME; start it with --any-local-user to serve every local account`,
        };
  if (peer.uid === owner.uid) return { admit: true };
  return {
    admit: false,
    uid: peer.uid,
    reason: `refused: this server answers only the user who owns CAPSEM_HOME (uid ${owner.uid}); this connection is from uid ${peer.uid}`,
  };
}

export interface Refusal {
  /** The peer's uid, where the table named one. */
  readonly uid?: number;
  readonly reason: string;
}

/** A note per refusing reason and uid, however often that uid retries: a log line each, not a flood. */
export function oncePerPeer(note: (text: string) => void): (refusal: Refusal) => void {
  const told = new Set<string>();
  return ({ uid, reason }) => {
    const key = `${uid ?? ''} ${reason}`;
    if (told.has(key)) return;
    told.add(key);
    note(reason);
  };
}

export interface LoopbackOptions {
  readonly port: number;
  /** CAPSEM_HOME: its owner, read at each connection, is the one user served (without one, this process's user). */
  readonly home: string | undefined;
  readonly rule: PeerRule;
  /** Called once per refused connection that had a peer to tell. */
  readonly onRefused?: (refusal: Refusal) => void;
  /** Tests stand in for the kernel's table. */
  readonly lookup?: (local: Endpoint, remote: Endpoint) => PeerLookup;
}

export interface LoopbackListener {
  readonly port: number;
  /** Connections refused so far, each from a peer that was told why (one gone before the check is not counted). */
  readonly refused: number;
  close(): Promise<void>;
}

/** How long a refused peer has to send its request and read the answer before the connection is cut. */
const REFUSAL_GRACE_MS = 5_000;

/**
 * A JSON 403, sent once the peer's request has begun, so a client that writes its request after
 * connecting reads an answer rather than a connection closed under it. What it sends is read and
 * dropped: closing with unread bytes would reset the connection and lose the answer.
 */
function refuse(socket: Socket, reason: string): void {
  const body = JSON.stringify({ error: reason });
  const answer = `HTTP/1.1 403 Forbidden\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`;
  socket.on('error', () => socket.destroy());
  socket.setTimeout(REFUSAL_GRACE_MS, () => socket.destroy());
  socket.once('data', () => socket.end(answer));
  socket.resume();
}

/** Listens on 127.0.0.1:`port` and passes `server` each connection `rule` admits. */
export async function listenOnLoopback(server: Server, options: LoopbackOptions): Promise<LoopbackListener> {
  const lookup = options.lookup ?? ((local, remote) => peerOf(local, remote));
  let refused = 0;
  const sockets = new Set<Socket>();
  const listener = createServer({ pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const local = { address: socket.localAddress ?? '', port: socket.localPort ?? 0 };
    const remote = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
    const { rule } = options;
    const admission =
      rule === 'any-local-user' ? { admit: true as const } : admitPeer(lookup(local, remote), homeOwner(options.home), rule);
    if (admission.admit) {
      server.emit('connection', socket);
      socket.resume();
      return;
    }
    if (admission.reason === null) return void socket.destroy();
    refused++;
    options.onRefused?.({ uid: admission.uid, reason: admission.reason });
    refuse(socket, admission.reason);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(options.port, '127.0.0.1', () => {
      listener.off('error', reject);
      resolve();
    });
  });
  return {
    port: (listener.address() as AddressInfo).port,
    get refused() {
      return refused;
    },
    async close() {
      const stopped = new Promise<void>((resolve) => listener.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
      // The HTTP server never listened itself: close() stops its timers and answers "not running".
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
