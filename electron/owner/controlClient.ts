import { connect, type Socket } from 'node:net';
import { z } from 'zod';
import { jsonLines, type JsonLines } from './jsonLines.ts';
import {
  dataMessages,
  MAX_DEPTH,
  MAX_LINE_BYTES,
  ServerMessageSchema,
  type ErrorBody,
  type JsonValue,
  type ServerMessage,
} from './wire.ts';

// A CLI's side of the control socket: calls that answer once, and streams for long-running
// methods (`capsem run` output, `capsem shell` terminal bytes) with input going the other way.

/** The owner answered a call with an error. */
export class ControlCallError extends Error {
  override name = 'ControlCallError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Where a stream's output goes. A handler that returns a promise (its destination is full, like a
 * stdout nobody reads) holds the reading of the connection until it settles, so the owner stops
 * sending and, through it, the guest stops producing.
 */
export interface StreamOutputHandlers {
  readonly onData?: (bytes: Buffer) => void | Promise<void>;
  readonly onEvent?: (event: JsonValue) => void | Promise<void>;
}

export interface ClientStream {
  readonly id: string;
  /** The method's whole answer, which carries `stream` and anything else the method returns. */
  readonly result: JsonValue;
  /** Sends input; false while the owner is behind reading it: pause the source until `whenDrained`. */
  write(bytes: Uint8Array | string): boolean;
  event(value: JsonValue): void;
  /** Calls `then` once the owner has caught up; never if the connection closes first. */
  whenDrained(then: () => void): void;
  /** Closes this side's input; output keeps flowing until the owner ends the stream. */
  end(): void;
  /** The exit code the owner sent with its end (null without one); rejects if the connection drops first. */
  readonly exit: Promise<number | null>;
}

interface Pending {
  settle(message: { result: JsonValue } | { error: ErrorBody }): void;
  drop(err: Error): void;
}

interface OpenStream {
  readonly handlers: StreamOutputHandlers;
  finish(exitCode: number | null): void;
  drop(err: Error): void;
}

const StreamResultSchema = z.looseObject({ stream: z.string().min(1) });

export class ControlClient {
  readonly #socket: Socket;
  readonly #wire: JsonLines;
  readonly #pending = new Map<number, Pending>();
  readonly #streams = new Map<string, OpenStream>();
  #nextId = 1;
  #closed: Error | null = null;
  /** close() was called: output still arriving is dropped, only the connection's end matters. */
  #closing = false;

  private constructor(socket: Socket) {
    this.#socket = socket;
    this.#wire = jsonLines(
      socket,
      { maxLine: MAX_LINE_BYTES, maxDepth: MAX_DEPTH },
      {
        onMessage: (value) => this.#receive(value),
        // The owner is our own code; garbage from it means the connection is not worth keeping.
        onBadLine: (reason) => socket.destroy(new Error(`the owner sent a line that is ${reason}`)),
        onOverflow: () => socket.destroy(new Error('the owner sent an overlong line')),
      },
    );
    socket.on('error', () => undefined);
    socket.on('close', () => this.#shutDown(new Error('the owner closed the control connection')));
  }

  /** Connects to an owner's socket; rejects (ENOENT, ECONNREFUSED) when nobody listens there. */
  static connect(path: string, timeoutMs = 2000): Promise<ControlClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      const timer = setTimeout(() => socket.destroy(new Error(`no answer on ${path} within ${timeoutMs} ms`)), timeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new ControlClient(socket));
      });
    });
  }

  /** Calls a method and resolves with its result; rejects with ControlCallError on an error answer. */
  call(method: string, params?: JsonValue): Promise<JsonValue> {
    return new Promise((resolve, reject) => {
      this.#request(method, params, {
        settle: (message) =>
          'error' in message ? reject(new ControlCallError(message.error.code, message.error.message)) : resolve(message.result),
        drop: reject,
      });
    });
  }

  /** Calls a streaming method. Handlers are registered before the answer arrives, so no output is missed. */
  stream(method: string, params: JsonValue | undefined, handlers: StreamOutputHandlers = {}): Promise<ClientStream> {
    return new Promise((resolve, reject) => {
      this.#request(method, params, {
        settle: (message) => {
          if ('error' in message) return reject(new ControlCallError(message.error.code, message.error.message));
          const parsed = StreamResultSchema.safeParse(message.result);
          if (!parsed.success) return reject(new Error(`${method} answered without a stream id`));
          // Registered synchronously, before the next line from the owner is read.
          resolve(this.#openStream(parsed.data.stream, message.result, handlers));
        },
        drop: reject,
      });
    });
  }

  /** Ends the connection; output still arriving is dropped, and a held reading resumes so the owner's end is seen. */
  close(): void {
    this.#closing = true;
    this.#socket.end();
    this.#wire.releaseHolds();
  }

  #request(method: string, params: JsonValue | undefined, pending: Pending): void {
    if (this.#closed) return pending.drop(this.#closed);
    const id = this.#nextId++;
    this.#pending.set(id, pending);
    this.#wire.send(params === undefined ? { id, method } : { id, method, params });
  }

  #openStream(id: string, result: JsonValue, handlers: StreamOutputHandlers): ClientStream {
    let finish!: (exitCode: number | null) => void;
    let drop!: (err: Error) => void;
    const exit = new Promise<number | null>((resolve, reject) => {
      finish = resolve;
      drop = reject;
    });
    // Callers that only care about output may never await `exit`; a dropped connection is not their bug.
    exit.catch(() => undefined);
    this.#streams.set(id, { handlers, finish, drop });
    const send = (message: unknown): boolean => !this.#streams.has(id) || this.#wire.send(message);
    return {
      id,
      result,
      exit,
      write: (bytes) => dataMessages(id, bytes).reduce((room, message) => send(message) && room, true),
      event: (value) => void send({ stream: id, event: value }),
      whenDrained: (then) => this.#wire.whenDrained(then),
      end: () => void send({ stream: id, end: true }),
    };
  }

  #receive(value: unknown): void {
    const parsed = ServerMessageSchema.safeParse(value);
    if (!parsed.success) return;
    const message: ServerMessage = parsed.data;
    if ('stream' in message) {
      const open = this.#streams.get(message.stream);
      if (!open) return;
      if ('data' in message || 'event' in message) {
        if (this.#closing) return;
        const full =
          'data' in message ? open.handlers.onData?.(Buffer.from(message.data, 'base64')) : open.handlers.onEvent?.(message.event);
        // Only a promise holds: a handler typed void may still return a value (a write's boolean).
        if (full instanceof Promise) this.#wire.holdReading(full);
      } else {
        this.#streams.delete(message.stream);
        open.finish(message.exitCode ?? null);
      }
      return;
    }
    // An error with a null id answers a line of ours the owner could not read; nothing waits on it.
    if (message.id === null || typeof message.id === 'string') return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    pending.settle(message);
  }

  #shutDown(err: Error): void {
    if (this.#closed) return;
    this.#closed = err;
    for (const pending of this.#pending.values()) pending.drop(err);
    for (const open of this.#streams.values()) open.drop(err);
    this.#pending.clear();
    this.#streams.clear();
  }
}
