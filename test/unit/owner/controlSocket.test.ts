import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ControlCallError, ControlClient } from '../../../electron/owner/controlClient.ts';
import {
  defineMethod,
  MethodError,
  startControlServer,
  type ControlServer,
  type MethodRegistry,
} from '../../../electron/owner/controlSocket.ts';
import { ensurePrivateDir } from '../../../electron/store/paths.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
ensurePrivateDir(home.runDir);
const path = join(home.runDir, 'control.sock');
const info = { pid: process.pid, kind: 'app', command: 'test', startedAt: new Date(0).toISOString(), version: '0.0.0' } as const;

// A method shaped like `vm.run`: a real child process whose output, input and exit code cross the socket.
const methods: MethodRegistry = {
  'test.add': defineMethod(z.object({ a: z.number(), b: z.number() }), ({ a, b }) => ({ sum: a + b })),
  'test.refuse': () => {
    throw new MethodError('not_running', 'no such VM');
  },
  'test.crash': () => {
    throw new Error('boom');
  },
  'test.unsendable': () => ({ size: 10n }),
  'test.brittle': (_params, call) => {
    const stream = call.openStream({
      onData: () => {
        throw new Error('this stream takes no input');
      },
    });
    return { stream: stream.id };
  },
  'test.run': defineMethod(z.object({ exitCode: z.number().int() }), ({ exitCode }, call) => {
    const script = `process.stdin.on('data', (d) => process.stdout.write(String(d).toUpperCase())); process.stdin.on('end', () => (process.exitCode = ${exitCode}))`;
    const stream = call.openStream({
      onData: (bytes) => void child.stdin.write(bytes),
      onEvent: (event) => void stream.event({ echo: event }),
      onEnd: () => child.stdin.end(),
      onClose: () => child.kill(),
    });
    const child = spawn(process.execPath, ['-e', script]);
    // Written before the answer: the server holds it back until the client knows the stream id.
    stream.write('started\n');
    child.stdout.on('data', (bytes: Buffer) => stream.write(bytes));
    // 'close', not 'exit': the exit can overtake the last of the output.
    child.on('close', (code) => stream.end(code ?? 1));
    return { stream: stream.id, pid: child.pid ?? null };
  }),
};

/** A method whose input waits for `held` to settle: a consumer that is full (a guest not reading its terminal). */
const slowInput = { taken: 0, held: Promise.resolve(), release: () => {} };
methods['test.slow-input'] = (_params, call) => {
  const stream = call.openStream({
    onData: (bytes) => {
      slowInput.taken += bytes.length;
      return slowInput.held;
    },
  });
  return { stream: stream.id };
};

/** A method that writes output as fast as its client takes it, as vm.run relays a guest's flood. */
const flood = { produced: 0, stopped: false };
methods['test.flood'] = (_params, call) => {
  const stream = call.openStream({ onClose: () => (flood.stopped = true) });
  const chunk = Buffer.alloc(64 * 1024, 0x7a);
  const more = (): void => {
    if (flood.stopped) return;
    while (stream.write(chunk)) flood.produced += chunk.length;
    flood.produced += chunk.length;
    stream.whenDrained(() => setImmediate(more));
  };
  setImmediate(more);
  return { stream: stream.id };
};

let server: ControlServer;
const clients: ControlClient[] = [];
async function client(): Promise<ControlClient> {
  const c = await ControlClient.connect(path);
  clients.push(c);
  return c;
}

/** A raw connection that sends bytes as given and collects the parsed lines it gets back. */
function raw(): Promise<{ socket: Socket; lines: unknown[]; closed: Promise<void>; next: (n: number) => Promise<unknown[]> }> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const lines: unknown[] = [];
    let buffer = '';
    const waiters: (() => void)[] = [];
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
      waiters.forEach((w) => w());
    });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    const next = (n: number): Promise<unknown[]> =>
      new Promise((r) => {
        const check = (): void => void (lines.length >= n && r(lines.slice(0, n)));
        waiters.push(check);
        check();
      });
    socket.on('connect', () => resolve({ socket, lines, closed, next }));
  });
}

afterEach(() => clients.splice(0).forEach((c) => c.close()));
afterAll(async () => {
  await server.close();
  home.remove();
});

describe('control socket', () => {
  it('replaces a socket file left by a killed owner and serves a private socket', async () => {
    const stale = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`]);
    await new Promise((r) => stale.stdout.once('data', r));
    stale.kill('SIGKILL');
    await new Promise((r) => stale.once('close', r));
    expect(statSync(path).isSocket()).toBe(true);
    await expect(ControlClient.connect(path)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    server = await startControlServer({ path, info, methods });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(home.runDir).mode & 0o777).toBe(0o700);
  });

  it('answers calls: owner.info, a registered method, and each kind of error', async () => {
    const c = await client();
    expect(await c.call('owner.info')).toEqual(info);
    expect(await c.call('test.add', { a: 2, b: 3 })).toEqual({ sum: 5 });
    await expect(c.call('test.add', { a: 'two' })).rejects.toMatchObject({ code: 'invalid_params', message: expect.stringMatching(/a/) });
    await expect(c.call('nope')).rejects.toEqual(new ControlCallError('unknown_method', 'unknown method nope'));
    await expect(c.call('test.refuse')).rejects.toMatchObject({ code: 'not_running', message: 'no such VM' });
    await expect(c.call('test.crash')).rejects.toMatchObject({ code: 'failed', message: 'boom' });
    server.register('test.late', () => 'late');
    expect(await c.call('test.late')).toBe('late');
    expect(() => server.register('owner.info', () => null)).toThrow(/already registered/);
  });

  it('streams a command: output live, input back, events both ways, and the exit code', async () => {
    const c = await client();
    let output = '';
    const events: unknown[] = [];
    const stream = await c.stream(
      'test.run',
      { exitCode: 3 },
      { onData: (b) => void (output += b.toString()), onEvent: (e) => void events.push(e) },
    );
    expect(stream.result).toMatchObject({ stream: stream.id, pid: expect.any(Number) });
    stream.write('hello ');
    stream.event({ cols: 80, rows: 24 });
    stream.write(Buffer.from('world'));
    await expect.poll(() => output).toBe('started\nHELLO WORLD');
    stream.end();
    expect(await stream.exit).toBe(3);
    expect(events).toEqual([{ echo: { cols: 80, rows: 24 } }]);
  });

  it('carries output larger than one line in chunks', async () => {
    const c = await client();
    let received = 0;
    const stream = await c.stream('test.run', { exitCode: 0 }, { onData: (b) => void (received += b.length) });
    stream.write('x'.repeat(3 * 1024 * 1024));
    stream.end();
    expect(await stream.exit).toBe(0);
    expect(received).toBe('started\n'.length + 3 * 1024 * 1024);
  });

  it('stops reading a client whose input the method cannot take yet, and reads on once it can', async () => {
    slowInput.taken = 0;
    slowInput.held = new Promise((r) => (slowInput.release = r));
    const c = await client();
    const stream = await c.stream('test.slow-input', undefined);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const total = 32 * 1024 * 1024;
    let refused = 0;
    for (let sent = 0; sent < total; sent += chunk.length) if (!stream.write(chunk)) refused += 1;
    // The client is told its input is not being taken, so a source like stdin can pause.
    expect(refused).toBeGreaterThan(0);
    let drained = false;
    stream.whenDrained(() => (drained = true));
    await expect.poll(() => slowInput.taken).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    // What one socket read carried, at most: the rest waits in the client's socket, not the owner's memory.
    expect(slowInput.taken).toBeLessThanOrEqual(2 * chunk.length);
    expect(drained).toBe(false);
    slowInput.release();
    await expect.poll(() => slowInput.taken, { timeout: 10_000 }).toBe(total);
    await expect.poll(() => drained).toBe(true);
  });

  it('holds the reading of output while a client handler is busy, so the owner stops producing, and reads on once it settles', async () => {
    Object.assign(flood, { produced: 0, stopped: false });
    const c = await client();
    let release!: () => void;
    const busy = new Promise<void>((r) => (release = r));
    let received = 0;
    await c.stream('test.flood', undefined, {
      onData: (b) => {
        received += b.length;
        return busy;
      },
    });
    await expect.poll(() => flood.produced).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    const held = flood.produced;
    await new Promise((r) => setTimeout(r, 300));
    // Stopped, not slowed: the owner's backlog bound, the socket buffers and a read, and no more.
    expect(flood.produced).toBe(held);
    expect(held).toBeLessThan(8 * 1024 * 1024);
    release();
    await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(held + 32 * 1024 * 1024);
    c.close();
    await expect.poll(() => flood.stopped).toBe(true);
  });

  it('ends the owner side of a stream when its client disconnects', async () => {
    const c = await client();
    const stream = await c.stream('test.run', { exitCode: 0 });
    const pid = (stream.result as { pid: number }).pid;
    c.close();
    await expect.poll(() => alive(pid)).toBe(false);
    await expect(stream.exit).rejects.toThrow(/closed the control connection/);
  });

  it('answers malformed lines with errors and keeps serving the same connection', async () => {
    const conn = await raw();
    conn.socket.write('not json\n{"id":7}\n{"id":8,"method":"owner.info","extra":1}\n[1,2]\n');
    conn.socket.write(
      '{"stream":"s99","data":"aGk="}\n{"stream":"s1","data":"***"}\n{"id":9,"method":"test.add","params":{"a":1,"b":1}}\n',
    );
    const lines = await conn.next(7);
    expect(lines.slice(0, 6)).toEqual([
      { id: null, error: { code: 'bad_message', message: expect.stringMatching(/^not JSON/) } },
      { id: 7, error: { code: 'bad_message', message: expect.any(String) } },
      { id: 8, error: { code: 'bad_message', message: expect.any(String) } },
      { id: null, error: { code: 'bad_message', message: expect.any(String) } },
      { id: null, error: { code: 'unknown_stream', message: 'no open stream s99' } },
      { id: null, error: { code: 'bad_message', message: expect.any(String) } },
    ]);
    expect(lines[6]).toEqual({ id: 9, result: { sum: 2 } });
    conn.socket.destroy();
  });

  it('fails only the call whose answer JSON cannot carry, and only the message whose input handler throws', async () => {
    const c = await client();
    await expect(c.call('test.unsendable')).rejects.toMatchObject({ code: 'failed', message: expect.stringMatching(/BigInt/) });
    const conn = await raw();
    conn.socket.write('{"id":1,"method":"test.brittle"}\n');
    const [opened] = (await conn.next(1)) as { result: { stream: string } }[];
    conn.socket.write(`{"stream":"${opened!.result.stream}","data":"aGk="}\n{"id":2,"method":"test.add","params":{"a":1,"b":2}}\n`);
    expect((await conn.next(3)).slice(1)).toEqual([
      { id: null, error: { code: 'failed', message: 'this stream takes no input' } },
      { id: 2, result: { sum: 3 } },
    ]);
    conn.socket.destroy();
    expect(await c.call('owner.info')).toEqual(info);
  });

  it('refuses a line nested deeper than 64 levels before parsing it, and keeps the connection', async () => {
    const conn = await raw();
    conn.socket.write(`{"id":1,"method":"test.add","params":{"a":${'['.repeat(63)}${']'.repeat(63)}}}\n`);
    conn.socket.write(`{"id":2,"method":"test.add","params":{"a":1,"b":2,"c":${'['.repeat(62)}${']'.repeat(62)}}}\n`);
    expect(await conn.next(2)).toEqual([
      { id: null, error: { code: 'bad_message', message: 'nested deeper than 64 levels' } },
      { id: 2, result: { sum: 3 } },
    ]);
    conn.socket.destroy();
  });

  it('drops a client whose line exceeds the cap, and serves the next one', async () => {
    const conn = await raw();
    const chunk = 'a'.repeat(64 * 1024);
    for (let i = 0; i < 17 && !conn.socket.destroyed; i++) conn.socket.write(chunk);
    await conn.closed;
    expect(conn.lines).toEqual([
      { id: null, error: { code: 'line_too_long', message: expect.stringMatching(/longer than 1048576 bytes/) } },
    ]);
    expect(await (await client()).call('owner.info')).toEqual(info);
  });

  it('rejects pending calls when the owner goes away, and removes its socket file on close', async () => {
    const c = await client();
    let release!: () => void;
    server.register('test.hang', () => new Promise<void>((r) => (release = r)));
    const pending = c.call('test.hang');
    await expect.poll(() => release !== undefined).toBe(true);
    await server.close();
    await expect(pending).rejects.toThrow(/closed the control connection/);
    expect(existsSync(path)).toBe(false);
    release();
    server = await startControlServer({ path, info });
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
