import type { CallName, CallParams, CallResult, CapsemApi, EventName, EventPayload } from '../../electron/contract/appContract.ts';
import { BROWSER_TOKEN_PARAM, BROWSER_WS_PATH } from '../../electron/contract/browserMode.ts';
import { CapsemCallError } from './callError.ts';

// Browser mode: the same CapsemApi as the Electron preload, carried as WireRequest/WireMessage
// JSON over one loopback WebSocket. The socket URL holds the per-run token, so it is kept in a
// private field and never logged or put in an error message.

export type ConnectionState =
  | { readonly kind: 'connecting'; readonly attempt: number }
  | { readonly kind: 'open'; readonly epoch: number }
  | { readonly kind: 'disconnected'; readonly reason: string; readonly retryAt: number; readonly attempt: number };

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

const FIRST_RETRY_MS = 300;
const MAX_RETRY_MS = 10_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export class WireClient implements CapsemApi {
  readonly mode = { kind: 'browser', reason: 'browser mode (no Electron preload in this page)' } as const;

  readonly #url: string;
  #socket: WebSocket | null = null;
  #nextId = 1;
  #attempt = 0;
  #opens = 0;
  #retryTimer: ReturnType<typeof setTimeout> | null = null;
  #state: ConnectionState = { kind: 'connecting', attempt: 0 };
  readonly #pending = new Map<number, Pending>();
  /** Requests made while the socket is not open; sent in order once it is. */
  readonly #queue: string[] = [];
  readonly #listeners = new Map<EventName, Set<(payload: unknown) => void>>();
  readonly #stateListeners = new Set<(state: ConnectionState) => void>();
  /**
   * Calls whose effect lives on the server side of this connection (subscriptions, an attached
   * terminal). A new socket is a new server-side session, so they are replayed on reconnect.
   */
  readonly #sticky = new Map<string, { name: CallName; params: unknown }>();

  constructor(url: string) {
    this.#url = url;
    this.#connect();
  }

  get state(): ConnectionState {
    return this.#state;
  }

  onState(listener: (state: ConnectionState) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Skip the backoff wait (the banner's "retry now"). */
  retryNow(): void {
    if (this.#state.kind !== 'disconnected') return;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#connect();
  }

  call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
    this.#remember(name, params);
    return new Promise<CallResult<N>>((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve: (value) => resolve(value as CallResult<N>), reject });
      this.#send(JSON.stringify({ id, call: name, params }));
    });
  }

  on<N extends EventName>(name: N, listener: (payload: EventPayload<N>) => void): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    // The server validated the payload against EVENTS before sending it.
    const untyped = listener as (payload: unknown) => void;
    set.add(untyped);
    return () => set.delete(untyped);
  }

  #remember(name: CallName, params: unknown): void {
    if (!isRecord(params)) return;
    const id = typeof params.id === 'string' ? params.id : 'list';
    if (name === 'live.subscribe') this.#sticky.set(`live:${id}`, { name, params });
    else if (name === 'terminal.attach') this.#sticky.set(`term:${id}`, { name, params });
    else if (name === 'terminal.resize') {
      const attached = this.#sticky.get(`term:${id}`);
      if (attached)
        this.#sticky.set(`term:${id}`, { name: 'terminal.attach', params: { ...(attached.params as object), size: params.size } });
    } else if (name === 'terminal.detach') this.#sticky.delete(`term:${id}`);
  }

  #send(frame: string): void {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(frame);
    else this.#queue.push(frame);
  }

  #setState(state: ConnectionState): void {
    this.#state = state;
    for (const listener of this.#stateListeners) listener(state);
  }

  #connect(): void {
    this.#retryTimer = null;
    this.#setState({ kind: 'connecting', attempt: this.#attempt });
    const socket = new WebSocket(this.#url);
    this.#socket = socket;
    const reconnecting = this.#attempt > 0;
    socket.onopen = () => {
      this.#attempt = 0;
      this.#opens += 1;
      this.#setState({ kind: 'open', epoch: this.#opens });
      if (reconnecting) {
        // Replayed first so live events resume before anything queued asks for fresh data.
        for (const { name, params } of this.#sticky.values()) {
          const id = this.#nextId++;
          this.#pending.set(id, { resolve: () => undefined, reject: () => undefined });
          socket.send(JSON.stringify({ id, call: name, params }));
        }
      }
      for (const frame of this.#queue.splice(0)) socket.send(frame);
    };
    socket.onmessage = (message: MessageEvent) => {
      if (typeof message.data === 'string') this.#receive(message.data);
    };
    socket.onclose = (event: CloseEvent) => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      // In-flight calls cannot be answered by a new socket: fail them so the UI shows why.
      for (const pending of this.#pending.values())
        pending.reject(new CapsemCallError({ code: 'disconnected', message: 'the connection to the Capsem core was lost' }));
      this.#pending.clear();
      this.#attempt += 1;
      const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.#attempt - 1)) * (0.8 + Math.random() * 0.4);
      const reason = event.reason || (event.code === 1006 ? 'the core is not reachable' : `closed (${event.code})`);
      this.#setState({ kind: 'disconnected', reason, retryAt: Date.now() + delay, attempt: this.#attempt });
      this.#retryTimer = setTimeout(() => this.#connect(), delay);
    };
  }

  #receive(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (!isRecord(message)) return;
    if (typeof message.event === 'string') {
      for (const listener of this.#listeners.get(message.event as EventName) ?? []) listener(message.payload);
      return;
    }
    if (typeof message.id !== 'number') return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    if ('error' in message && isRecord(message.error)) {
      const error = message.error;
      pending.reject(
        new CapsemCallError({
          code: typeof error.code === 'string' ? error.code : 'error',
          message: typeof error.message === 'string' ? error.message : 'the call failed',
          candidates: Array.isArray(error.candidates) ? (error.candidates as { id: string; name: string | null }[]) : undefined,
        }),
      );
    } else {
      pending.resolve(message.result);
    }
  }
}

const TOKEN_KEY = 'capsem.token';

/**
 * The token from the page URL (`?token=` or `#token=`), then taken out of the address bar so it
 * does not end up in screenshots, history or copied links; kept in sessionStorage for reloads.
 */
export function takeToken(): string | null {
  const url = new URL(window.location.href);
  const hash = new URLSearchParams(url.hash.replace(/^#/, ''));
  const token = url.searchParams.get(BROWSER_TOKEN_PARAM) ?? hash.get(BROWSER_TOKEN_PARAM);
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    url.searchParams.delete(BROWSER_TOKEN_PARAM);
    hash.delete(BROWSER_TOKEN_PARAM);
    url.hash = hash.toString();
    window.history.replaceState(null, '', url.toString());
    return token;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export function socketUrl(token: string | null): string {
  const scheme = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = token ? `?${BROWSER_TOKEN_PARAM}=${encodeURIComponent(token)}` : '';
  return `${scheme}//${window.location.host}${BROWSER_WS_PATH}${query}`;
}
