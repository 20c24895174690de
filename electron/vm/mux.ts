import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import type { FsChange } from '../recording/fsEventRows.ts';
import {
  encodeFrame,
  encodeJsonFrame,
  encodeResize,
  encodeU32,
  FrameDecoder,
  FrameType,
  MAX_PAYLOAD,
  PROTOCOL_VERSION,
  ProtocolError,
  type Frame,
} from './frame.ts';

// The host end of the agent's multiplexed port (native/agent/PROTOCOL.md): the handshake, control
// messages, and streams with credit-based flow control. Each stream holds at most one window of
// unread data, so a stalled stream never blocks the others and a flood from the guest cannot grow
// host memory; the guest overrunning its window is a protocol error.

/** What the guest may send on a stream before the host grants more: a stream's share of host memory. */
export const STREAM_WINDOW = 1_048_576;
/**
 * What the host may send on a stream before the guest grants more (the agent's RECEIVE_WINDOW):
 * larger, because a download into a TCG guest is bound by window / round trip.
 */
export const GUEST_RECEIVE_WINDOW = 4_194_304;
const HOST_AGENT = 'capsem-host 0.1.0';

/** What the port has carried since it connected, for profiles (the download bench's hop table). */
export interface MuxCounters {
  /** Frames written to the port. */
  framesOut: number;
  /** Time spent encoding frames and handing them to the port's socket, in ms. */
  sendMs: number;
  /** Time streams spent with data to send and no window left from the guest, in ms, summed over streams. */
  creditWaitMs: number;
}

export interface Hello {
  readonly protocol: number;
  readonly role: string;
  readonly agent?: string;
}

export interface ControlMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: string | null;
}

export type OpenRequest =
  | {
      readonly kind: 'pty';
      readonly cols: number;
      readonly rows: number;
      readonly term: string;
      readonly argv?: readonly string[];
      readonly env?: Readonly<Record<string, string>>;
    }
  | {
      readonly kind: 'exec';
      readonly argv: readonly string[];
      readonly env?: Readonly<Record<string, string>>;
      readonly cwd?: string;
      readonly stdin: boolean;
    };

export interface NetOpen {
  readonly kind: 'net';
  readonly process: string | null;
  readonly pid: number | null;
  /** A connection the guest's redirect rules brought to the transparent listener: where it was going. */
  readonly destination?: { readonly address: string; readonly port: number };
}

/** A DNS query (one datagram) or a DNS-over-TCP connection, to the agent's answerer. */
export interface DnsOpen {
  readonly kind: 'dns';
  readonly process: string | null;
  readonly pid: number | null;
  readonly transport: 'udp' | 'tcp';
}

export type GuestOpen = NetOpen | DnsOpen;

/** What a guest OPEN asks for, or why it cannot be served. */
function guestOpen(open: Record<string, unknown>): GuestOpen | string {
  const process = typeof open.process === 'string' ? open.process : null;
  const pid = typeof open.pid === 'number' && Number.isInteger(open.pid) ? open.pid : null;
  if (open.kind === 'dns') {
    if (open.transport !== 'udp' && open.transport !== 'tcp') return 'a dns stream names its transport, udp or tcp';
    return { kind: 'dns', process, pid, transport: open.transport };
  }
  if (open.kind !== 'net') return `the guest may only open net and dns streams, not ${String(open.kind).slice(0, 40)}`;
  if (open.dst === undefined) return { kind: 'net', process, pid };
  const dst = open.dst as { address?: unknown; port?: unknown } | null;
  const port = dst?.port;
  if (
    typeof dst?.address !== 'string' ||
    isIP(dst.address) === 0 ||
    typeof port !== 'number' ||
    !Number.isInteger(port) ||
    port < 1 ||
    port > 65535
  ) {
    return 'a net stream\'s dst must be {"address": an IP address, "port": 1 to 65535}';
  }
  return { kind: 'net', process, pid, destination: { address: dst.address, port } };
}

export class ProtocolMismatchError extends Error {
  override name = 'ProtocolMismatchError';
}

function parseJson(payload: Buffer, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new ProtocolError(`${what} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ProtocolError(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** One conversation on the port: a terminal, a command, or a guest connection. */
export class MuxStream extends Duplex {
  /** A command's stderr (DATA with flags 1). */
  readonly stderr = new PassThrough();
  exitStatus: ExitStatus | null = null;
  private sendCredit = GUEST_RECEIVE_WINDOW;
  /** Bytes the guest may still send before it must wait for a WINDOW from us. */
  recvCredit = STREAM_WINDOW;
  private ungranted = 0;
  private stdoutBlocked = false;
  private stderrBlocked = false;
  private creditWithheld = false;
  private pending: { chunk: Buffer; callback: (err?: Error | null) => void } | null = null;
  /** When the stream ran out of the guest's window with data still to send. */
  private starvedSince: number | null = null;
  private sentClose = false;
  remoteClosed = false;
  /** Why the stream was ended, when it was ended without an error event. */
  resetReason: string | null = null;

  constructor(
    private readonly mux: AgentMux,
    readonly id: number,
    readonly meta: OpenRequest | GuestOpen,
  ) {
    // A quarter window buffered unread stops the grants: what a stream holds on the host is
    // bounded by this plus the window the guest was granted.
    super({ readableHighWaterMark: STREAM_WINDOW / 4, writableHighWaterMark: STREAM_WINDOW, allowHalfOpen: true });
  }

  resize(cols: number, rows: number): void {
    if (!this.destroyed) this.mux.send(FrameType.RESIZE, this.id, encodeResize(cols, rows));
  }

  /** The guest is granted no more window here: it may send what it was granted, then its output waits in the guest. */
  withholdCredit(): void {
    this.creditWithheld = true;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.pending = { chunk, callback };
    this.sendPending();
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.sentClose = true;
    this.mux.send(FrameType.CLOSE, this.id);
    callback();
  }

  override _read(): void {
    if (this.stdoutBlocked) {
      this.stdoutBlocked = false;
      this.grant();
    }
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!(this.sentClose && this.remoteClosed))
      this.mux.send(FrameType.RESET, this.id, Buffer.from(err?.message ?? this.resetReason ?? 'closed by the host'));
    this.mux.forget(this.id);
    this.endStarved();
    this.stderr.destroy();
    const pending = this.pending;
    this.pending = null;
    pending?.callback(err ?? new Error('stream closed'));
    callback(err);
  }

  /** Called by the mux for each frame on this stream. */
  receive(frame: Frame): void {
    switch (frame.type) {
      case FrameType.DATA:
        this.recvCredit -= frame.payload.length;
        if (this.recvCredit < 0) throw new ProtocolError(`the guest sent past its window on stream ${this.id}`);
        this.ungranted += frame.payload.length;
        if (frame.flags === 1) {
          // One wait per blocked spell: a frame that lands while stderr is already full adds none.
          if (!this.stderr.write(frame.payload) && !this.stderrBlocked) {
            this.stderrBlocked = true;
            this.stderr.once('drain', () => {
              this.stderrBlocked = false;
              this.grant();
            });
          }
        } else if (!this.push(frame.payload)) this.stdoutBlocked = true;
        if (this.ungranted >= STREAM_WINDOW / 4) this.grant();
        return;
      case FrameType.WINDOW:
        this.sendCredit += frame.payload.readUInt32LE(0);
        this.endStarved();
        this.sendPending();
        return;
      case FrameType.CLOSE:
        this.remoteClosed = true;
        this.stderr.end();
        this.push(null);
        return;
      case FrameType.EXIT: {
        const status = parseJson(frame.payload, 'EXIT');
        this.exitStatus = {
          code: typeof status.code === 'number' ? status.code : null,
          signal: typeof status.signal === 'string' ? status.signal : null,
        };
        this.emit('exit', this.exitStatus);
        return;
      }
      case FrameType.RESET:
        this.remoteClosed = true;
        this.sentClose = true;
        abort(this, new Error(`the guest reset the stream: ${frame.payload.toString('utf8') || 'no reason given'}`));
        return;
      default:
        throw new ProtocolError(`frame type 0x${frame.type.toString(16)} is not valid from the guest on a stream`);
    }
  }

  private grant(): void {
    if (this.stdoutBlocked || this.stderrBlocked || this.creditWithheld || this.ungranted === 0 || this.destroyed) return;
    this.mux.send(FrameType.WINDOW, this.id, encodeU32(this.ungranted));
    this.recvCredit += this.ungranted;
    this.ungranted = 0;
  }

  private sendPending(): void {
    while (this.pending && this.sendCredit > 0) {
      const { chunk, callback } = this.pending;
      const n = Math.min(chunk.length, this.sendCredit, MAX_PAYLOAD);
      this.mux.send(FrameType.DATA, this.id, chunk.subarray(0, n));
      this.sendCredit -= n;
      if (n === chunk.length) {
        this.pending = null;
        callback();
      } else this.pending = { chunk: chunk.subarray(n), callback };
    }
    if (this.pending && this.starvedSince === null) this.starvedSince = performance.now();
  }

  private endStarved(): void {
    if (this.starvedSince === null) return;
    this.mux.counters.creditWaitMs += performance.now() - this.starvedSince;
    this.starvedSince = null;
  }
}

interface MuxEvents {
  /** A stream the guest opened: a connection to a net listener, or a DNS query. */
  stream: [MuxStream];
  control: [ControlMessage];
  fs: [readonly FsChange[]];
  error: [Error];
  close: [];
}

/** The host end of one agent connection. */
export class AgentMux extends EventEmitter<MuxEvents> {
  readonly counters: MuxCounters = { framesOut: 0, sendMs: 0, creditWaitMs: 0 };
  private readonly decoder = new FrameDecoder();
  private readonly streams = new Map<number, MuxStream>();
  private nextId = 1;
  private pings = 0;
  private hello: Hello | null = null;
  private helloWaiters: { resolve: (h: Hello) => void; reject: (e: Error) => void }[] = [];
  private failure: Error | null = null;
  private closed = false;

  constructor(private readonly port: Duplex) {
    super();
    port.on('data', (chunk: Buffer) => this.onBytes(chunk));
    port.on('error', (err) => this.fail(err));
    port.on('close', () => this.onPortClosed());
  }

  /** Resolves with the guest's HELLO once it arrived and was answered; rejects on a version mismatch. */
  handshake(timeoutMs: number): Promise<Hello> {
    if (this.hello) return Promise.resolve(this.hello);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the guest agent did not say hello within ${timeoutMs} ms`)), timeoutMs);
      this.helloWaiters.push({
        resolve: (h) => (clearTimeout(timer), resolve(h)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  control(message: ControlMessage): void {
    this.send(FrameType.CONTROL, 0, Buffer.from(JSON.stringify(message)));
  }

  /** The next control message of `type`, or a rejection after `timeoutMs` or when the port fails. */
  nextControl(type: string, timeoutMs: number, match: (m: ControlMessage) => boolean = () => true): Promise<ControlMessage> {
    return new Promise((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        this.off('control', onControl);
        this.off('close', onClose);
      };
      const onControl = (m: ControlMessage): void => {
        if (m.type !== type || !match(m)) return;
        cleanup();
        resolve(m);
      };
      const onClose = (): void => {
        cleanup();
        reject(this.failure ?? new Error(`the agent's port closed while waiting for ${type}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`no ${type} from the guest agent within ${timeoutMs} ms`));
      }, timeoutMs);
      this.on('control', onControl);
      this.on('close', onClose);
    });
  }

  /** Round-trip time of a ping, in ms. */
  async ping(timeoutMs: number): Promise<number> {
    const id = ++this.pings;
    const t0 = performance.now();
    const pong = this.nextControl('pong', timeoutMs, (m) => m.id === id);
    this.control({ type: 'ping', id });
    await pong;
    return performance.now() - t0;
  }

  open(request: OpenRequest): MuxStream {
    if (this.failure) throw this.failure;
    const id = this.nextId;
    this.nextId += 2;
    const stream = new MuxStream(this, id, request);
    this.streams.set(id, stream);
    this.send(FrameType.OPEN, id, Buffer.from(JSON.stringify(request)));
    return stream;
  }

  send(type: FrameType, stream: number, payload?: Uint8Array, flags = 0): void {
    if (this.closed || this.port.destroyed) return;
    const t = performance.now();
    this.port.write(encodeFrame(type, stream, payload, flags));
    this.counters.sendMs += performance.now() - t;
    this.counters.framesOut++;
  }

  forget(id: number): void {
    this.streams.delete(id);
  }

  get openStreams(): number {
    return this.streams.size;
  }

  close(): void {
    if (this.closed) return;
    for (const s of [...this.streams.values()]) abort(s, new Error('the agent connection closed'));
    this.closed = true;
    this.port.destroy();
  }

  private onBytes(chunk: Buffer): void {
    if (this.failure) return;
    try {
      for (const frame of this.decoder.push(chunk)) this.dispatch(frame);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.send(FrameType.ERROR, 0, Buffer.from(err.message));
      this.fail(err);
    }
  }

  private dispatch(frame: Frame): void {
    if (frame.stream === 0) return this.dispatchControl(frame);
    if (!this.hello) throw new ProtocolError('the guest sent a stream frame before its hello');
    if (frame.type === FrameType.OPEN) {
      if (frame.stream % 2 !== 0) throw new ProtocolError(`the guest opened stream ${frame.stream}, an id the host owns`);
      if (this.streams.has(frame.stream)) throw new ProtocolError(`the guest reopened stream ${frame.stream}`);
      const meta = guestOpen(parseJson(frame.payload, 'OPEN'));
      // One stream the host cannot serve costs that stream, not the session's others.
      if (typeof meta === 'string') return this.send(FrameType.RESET, frame.stream, Buffer.from(meta));
      const stream = new MuxStream(this, frame.stream, meta);
      this.streams.set(frame.stream, stream);
      if (this.listenerCount('stream') === 0) abort(stream, new Error('nothing on the host takes guest connections'));
      else this.emit('stream', stream);
      return;
    }
    // A frame for a stream already gone (reset by one side while the other was sending) is dropped.
    this.streams.get(frame.stream)?.receive(frame);
  }

  private dispatchControl(frame: Frame): void {
    switch (frame.type) {
      case FrameType.HELLO: {
        if (this.hello) return;
        const hello = parseJson(frame.payload, 'HELLO');
        const protocol = typeof hello.protocol === 'number' ? hello.protocol : NaN;
        if (protocol !== PROTOCOL_VERSION) {
          const message = `protocol mismatch: host ${PROTOCOL_VERSION}, guest ${String(hello.protocol)}`;
          this.send(FrameType.ERROR, 0, Buffer.from(message));
          return this.fail(new ProtocolMismatchError(`${message}; rebuild the guest image so its agent matches this app`));
        }
        this.hello = { protocol, role: String(hello.role ?? ''), agent: typeof hello.agent === 'string' ? hello.agent : undefined };
        this.port.write(encodeJsonFrame(FrameType.HELLO, 0, { protocol: PROTOCOL_VERSION, role: 'host', agent: HOST_AGENT }));
        for (const w of this.helloWaiters.splice(0)) w.resolve(this.hello);
        return;
      }
      case FrameType.CONTROL: {
        const message = parseJson(frame.payload, 'CONTROL');
        if (typeof message.type !== 'string') throw new ProtocolError('a control message has no type');
        this.emit('control', message as ControlMessage);
        return;
      }
      case FrameType.EVENT: {
        const event = parseJson(frame.payload, 'EVENT');
        if (event.type === 'fs' && Array.isArray(event.events)) this.emit('fs', event.events.filter(isFsChange).map(guestFields));
        return;
      }
      case FrameType.ERROR:
        return this.fail(new Error(`the guest agent reported: ${frame.payload.toString('utf8')}`));
      default:
        throw new ProtocolError(`frame type 0x${frame.type.toString(16)} is not valid on stream 0`);
    }
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    for (const w of this.helloWaiters.splice(0)) w.reject(err);
    if (this.listenerCount('error') > 0) this.emit('error', err);
    this.close();
  }

  private onPortClosed(): void {
    this.closed = true;
    for (const s of [...this.streams.values()]) abort(s, this.failure ?? new Error('the agent connection closed'));
    for (const w of this.helloWaiters.splice(0)) w.reject(this.failure ?? new Error('the agent connection closed before hello'));
    this.emit('close');
  }
}

/**
 * Ends a stream with an error its owner can see; a stream nobody listens to for errors is ended
 * quietly (the reason still reaches the guest in the RESET) instead of throwing in the event loop.
 */
function abort(stream: MuxStream, err: Error): void {
  if (stream.listenerCount('error') > 0) stream.destroy(err);
  else {
    stream.resetReason = err.message;
    stream.destroy();
  }
}

/** Only what the guest may say: what the host read of a path (`content`) is the host's to add. */
const guestFields = (c: FsChange): FsChange => ({
  action: c.action,
  path: c.path,
  size: c.size,
  is_dir: c.is_dir === true,
  ts_ms: c.ts_ms,
});

/** A guest-reported change, kept only when its path is relative and stays inside the workspace. */
function isFsChange(value: unknown): value is FsChange {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.action !== 'created' && v.action !== 'modified' && v.action !== 'deleted') return false;
  if (typeof v.path !== 'string' || v.path === '' || v.path.startsWith('/') || v.path.split('/').includes('..')) return false;
  return (v.size === null || typeof v.size === 'number') && typeof v.ts_ms === 'number';
}
