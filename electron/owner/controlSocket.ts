import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { z } from 'zod';
import { jsonLines, type JsonLines } from './jsonLines.ts';
import {
  ClientMessageSchema,
  dataMessages,
  ErrorCode,
  MAX_DEPTH,
  MAX_LINE_BYTES,
  type ErrorBody,
  type JsonValue,
  type OwnerInfo,
} from './wire.ts';

// The owner's side of the control socket. Capabilities register methods by name; a method either
// answers once (its return value) or opens a stream and returns its id, after which output,
// events and the exit code flow to the client and the client's input flows back.

/** Input from the client on a stream, and its going away. All optional. */
export interface StreamInputHandlers {
  /** A promise returned here holds further input from this client until it settles (the consumer is full). */
  readonly onData?: (bytes: Buffer) => void | Promise<void>;
  readonly onEvent?: (event: JsonValue) => void;
  /** The client closed its input (like EOF on stdin); output may continue. */
  readonly onEnd?: () => void;
  /** The client disconnected before the stream ended: stop or detach whatever feeds it. */
  readonly onClose?: () => void;
}

/**
 * The owner's end of a stream. `write` and `event` return false while the client is behind (it
 * stopped reading): the producer pauses until `whenDrained`, so a flood waits at its source.
 */
export interface OwnerStream {
  readonly id: string;
  write(bytes: Uint8Array | string): boolean;
  event(value: JsonValue): boolean;
  /** Calls `then` once the client has caught up; never if it disconnects first (`onClose` says so). */
  whenDrained(then: () => void): void;
  /** Ends the stream; later writes are dropped. */
  end(exitCode?: number): void;
  readonly ended: boolean;
}

export interface CallContext {
  /** Opens a stream on this client's connection; return `{ stream: stream.id, ... }` from the method. */
  openStream(handlers?: StreamInputHandlers): OwnerStream;
}

export type MethodHandler = (params: JsonValue | undefined, call: CallContext) => unknown;
export type MethodRegistry = Record<string, MethodHandler>;

/** An error a method means to report, with its own code; any other throw is reported as `failed`. */
export class MethodError extends Error {
  override name = 'MethodError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A handler whose params are checked by `schema` first; a mismatch answers `invalid_params`. */
export function defineMethod<S extends z.ZodType>(schema: S, handler: (params: z.output<S>, call: CallContext) => unknown): MethodHandler {
  return (params, call) => {
    const parsed = schema.safeParse(params);
    if (!parsed.success) throw new MethodError(ErrorCode.invalidParams, z.prettifyError(parsed.error).replace(/\n/g, '; '));
    return handler(parsed.data, call);
  };
}

export interface ControlServerOptions {
  /** Socket path. The caller must hold the owner lock: a file already there is removed as stale. */
  readonly path: string;
  readonly info: OwnerInfo;
  readonly methods?: MethodRegistry;
  readonly maxLine?: number;
}

export interface ControlServer {
  readonly path: string;
  /** Adds a method after start; a name can be registered once. */
  register(name: string, handler: MethodHandler): void;
  close(): Promise<void>;
}

export async function startControlServer(options: ControlServerOptions): Promise<ControlServer> {
  const methods = new Map<string, MethodHandler>([['owner.info', () => options.info]]);
  const register = (name: string, handler: MethodHandler): void => {
    if (methods.has(name)) throw new Error(`control method ${name} is already registered`);
    methods.set(name, handler);
  };
  for (const [name, handler] of Object.entries(options.methods ?? {})) register(name, handler);
  const maxLine = options.maxLine ?? MAX_LINE_BYTES;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(socket, methods, maxLine);
  });
  removeStaleSocket(options.path);
  await listen(server, options.path);
  // The run dir is 0700, so the moment between listen and chmod exposes nothing.
  chmodSync(options.path, 0o600);
  return {
    path: options.path,
    register,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      // sun_path holds about 104-108 bytes; a deep CAPSEM_HOME overflows it.
      if (Buffer.byteLength(path) > 103)
        reject(
          new Error(
            `control socket path is too long for a unix socket (${Buffer.byteLength(path)} bytes): ${path}; use a shorter CAPSEM_HOME`,
          ),
        );
      else reject(err);
    });
    server.listen(path, () => resolve());
  });
}

function removeStaleSocket(path: string): void {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; remove it by hand`);
  unlinkSync(path);
}

interface LiveStream {
  readonly handlers: StreamInputHandlers;
  readonly stream: OwnerStream & { finish(): void };
}

function serveConnection(socket: Socket, methods: ReadonlyMap<string, MethodHandler>, maxLine: number): void {
  const streams = new Map<string, LiveStream>();
  /** Ended streams, so input that crossed the end on the wire is dropped quietly, not reported. */
  const ended = new Set<string>();
  let nextStream = 1;
  const fail = (id: string | number | null, error: ErrorBody): void => void wire.send({ id, error });
  const wire: JsonLines = jsonLines(
    socket,
    { maxLine, maxDepth: MAX_DEPTH },
    {
      onBadLine: (reason) => fail(null, { code: ErrorCode.badMessage, message: reason }),
      onOverflow: () => {
        fail(null, { code: ErrorCode.lineTooLong, message: `line longer than ${maxLine} bytes; closing the connection` });
        socket.end();
        socket.destroySoon();
      },
      onMessage: (value) => {
        // A throw here would leave the socket's 'data' handler and stop the owner: it fails this message only.
        try {
          receive(value);
        } catch (err) {
          fail(null, { code: ErrorCode.failed, message: messageOf(err) });
        }
      },
    },
  );

  const receive = (value: unknown): void => {
    const parsed = ClientMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = (value as { id?: unknown } | null)?.id;
      fail(typeof id === 'string' || typeof id === 'number' ? id : null, {
        code: ErrorCode.badMessage,
        message: z.prettifyError(parsed.error).replace(/\n/g, '; '),
      });
      return;
    }
    const message = parsed.data;
    if ('method' in message) {
      void call(message.id, message.method, message.params);
      return;
    }
    const live = streams.get(message.stream);
    if (!live) {
      if (!ended.has(message.stream)) fail(null, { code: ErrorCode.unknownStream, message: `no open stream ${message.stream}` });
      return;
    }
    if ('data' in message) {
      const full = live.handlers.onData?.(Buffer.from(message.data, 'base64'));
      // Only a promise holds: a handler typed void may still return a value (a write's boolean).
      if (full instanceof Promise) wire.holdReading(full);
    } else if ('event' in message) live.handlers.onEvent?.(message.event);
    else live.handlers.onEnd?.();
  };

  const call = async (id: string | number, method: string, params: JsonValue | undefined): Promise<void> => {
    const handler = methods.get(method);
    if (!handler) return fail(id, { code: ErrorCode.unknownMethod, message: `unknown method ${method}` });
    const opened: LiveStream[] = [];
    const context: CallContext = {
      openStream: (handlers = {}) => {
        const live = { handlers, stream: openStream(`s${nextStream++}`) };
        opened.push(live);
        streams.set(live.stream.id, live);
        return live.stream;
      },
    };
    try {
      const result = await handler(params, context);
      wire.send({ id, result: result ?? null });
    } catch (err) {
      // A handler that throws, or an answer JSON cannot carry, fails this call; the owner goes on.
      for (const live of opened) live.stream.end();
      return fail(
        id,
        err instanceof MethodError ? { code: err.code, message: err.message } : { code: ErrorCode.failed, message: messageOf(err) },
      );
    }
    for (const live of opened) live.stream.finish();
  };

  /** Output written before the method's answer is held back, so the client knows the id first. */
  const openStream = (id: string): LiveStream['stream'] => {
    let held: unknown[] | null = [];
    let done = false;
    // Held messages wait only for the method's answer, a moment: they do not count as a backlog.
    const send = (message: unknown): boolean => {
      if (!held) return wire.send(message);
      held.push(message);
      return true;
    };
    return {
      id,
      get ended() {
        return done;
      },
      write(bytes) {
        let room = true;
        if (!done) for (const message of dataMessages(id, bytes)) room = send(message);
        return room;
      },
      event(value) {
        return done || send({ stream: id, event: value });
      },
      whenDrained: (then) => wire.whenDrained(then),
      end(exitCode) {
        if (done) return;
        done = true;
        send(exitCode === undefined ? { stream: id, end: true } : { stream: id, end: true, exitCode });
        streams.delete(id);
        ended.add(id);
      },
      finish() {
        const queue = held ?? [];
        held = null;
        for (const message of queue) wire.send(message);
      },
    };
  };

  socket.on('error', () => socket.destroy());
  socket.on('close', () => {
    for (const live of [...streams.values()]) {
      live.stream.end();
      try {
        live.handlers.onClose?.();
      } catch {
        // The client is gone, so there is no one to tell; the other streams still get their onClose.
      }
    }
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
