import { afterEach, describe, expect, it } from 'vitest';
import { encodeFrame, encodeJsonFrame, encodeU32, FrameType, PROTOCOL_VERSION } from '../../../electron/vm/frame.ts';
import { GUEST_RECEIVE_WINDOW, ProtocolMismatchError, STREAM_WINDOW, type MuxStream } from '../../../electron/vm/mux.ts';
import { isFrame as isType, scriptedGuest, scriptedGuestReady as readyGuest, type ScriptedGuest } from '../../helpers/scriptedGuest.ts';

// The host mux against a scripted guest on a real unix socket pair: the guest side is written
// frame by frame here, so each rule of the protocol is exercised on its own.

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function pair(): Promise<ScriptedGuest> {
  const p = await scriptedGuest();
  cleanups.push(p.close);
  return p;
}

async function ready(): Promise<ScriptedGuest> {
  const p = await readyGuest();
  cleanups.push(p.close);
  return p;
}

describe('AgentMux', () => {
  it('answers the guest hello once and ignores repeats', async () => {
    const p = await ready();
    p.guest.write(encodeJsonFrame(FrameType.HELLO, 0, { protocol: PROTOCOL_VERSION, role: 'guest' }));
    const rtt = p.mux.ping(1000);
    const ping = JSON.parse((await p.next(isType(FrameType.CONTROL))).payload.toString()) as { id: number };
    p.guest.write(encodeJsonFrame(FrameType.CONTROL, 0, { type: 'pong', id: ping.id }));
    expect(await rtt).toBeGreaterThanOrEqual(0);
    expect(p.frames.filter(isType(FrameType.HELLO))).toHaveLength(0);
  });

  it('refuses a guest of another protocol version, naming both, and tells the guest', async () => {
    const p = await pair();
    const hello = p.mux.handshake(2000);
    // An agent from before version 2, which would start a login shell where a pty OPEN names a program.
    p.guest.write(encodeJsonFrame(FrameType.HELLO, 0, { protocol: 1, role: 'guest' }));
    await expect(hello).rejects.toThrow(ProtocolMismatchError);
    await expect(hello).rejects.toThrow('protocol mismatch: host 2, guest 1');
    expect((await p.next(isType(FrameType.ERROR))).payload.toString()).toBe('protocol mismatch: host 2, guest 1');
  });

  it('sends a protocol error back and fails, rather than crashing, on a malformed frame', async () => {
    const p = await ready();
    const failed = new Promise<Error>((r) => p.mux.on('error', r));
    p.guest.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect((await failed).message).toMatch(/frame/);
    expect((await p.next(isType(FrameType.ERROR))).payload.toString()).toMatch(/frame/);
  });

  it('sends no more than the window until the guest grants more', async () => {
    const p = await ready();
    const s = p.mux.open({ kind: 'exec', argv: ['cat'], stdin: true });
    const open = await p.next(isType(FrameType.OPEN, s.id));
    expect(JSON.parse(open.payload.toString())).toMatchObject({ kind: 'exec', argv: ['cat'] });
    let finished = false;
    s.write(Buffer.alloc(GUEST_RECEIVE_WINDOW * 2, 1), () => (finished = true));
    const sent = () => p.frames.filter(isType(FrameType.DATA, s.id)).reduce((n, f) => n + f.payload.length, 0);
    // Polled, not slept on: on a loaded host 4 MiB over the socket can take longer than a fixed wait.
    await expect.poll(sent).toBe(GUEST_RECEIVE_WINDOW);
    await new Promise((r) => setTimeout(r, 200));
    expect(sent()).toBe(GUEST_RECEIVE_WINDOW);
    expect(finished).toBe(false);
    expect(p.mux.counters.creditWaitMs).toBe(0);
    p.guest.write(encodeFrame(FrameType.WINDOW, s.id, encodeU32(GUEST_RECEIVE_WINDOW)));
    await expect.poll(sent).toBe(GUEST_RECEIVE_WINDOW * 2);
    await expect.poll(() => finished).toBe(true);
    // The wait for the window is counted once it ends, and every frame written is counted.
    expect(p.mux.counters.creditWaitMs).toBeGreaterThanOrEqual(150);
    expect(p.mux.counters.framesOut).toBe(p.frames.filter(isType(FrameType.DATA, s.id)).length + 1);
  });

  it('keeps a stalled stream from blocking another, and grants window only as data is read', async () => {
    const p = await ready();
    const stalled = p.mux.open({ kind: 'exec', argv: ['a'], stdin: false });
    const flowing = p.mux.open({ kind: 'exec', argv: ['b'], stdin: false });
    const chunk = Buffer.alloc(65_536, 7);
    for (let i = 0; i < 4; i++) p.guest.write(encodeFrame(FrameType.DATA, stalled.id, chunk));
    let got = 0;
    flowing.on('data', (c: Buffer) => (got += c.length));
    for (let i = 0; i < 4; i++) p.guest.write(encodeFrame(FrameType.DATA, flowing.id, chunk));
    await p.next(isType(FrameType.WINDOW, flowing.id));
    expect(got).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(p.frames.filter(isType(FrameType.WINDOW, stalled.id))).toHaveLength(0);
    let read = 0;
    stalled.on('data', (c: Buffer) => (read += c.length));
    await p.next(isType(FrameType.WINDOW, stalled.id));
    expect(read).toBe(4 * 65_536);
  });

  it('holds the grants while a paused stderr is full, without a leak warning however many frames land, and grants once it is read', async () => {
    const p = await ready();
    const s = p.mux.open({ kind: 'exec', argv: ['sh'], stdin: false });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    cleanups.push(() => process.off('warning', onWarning));
    s.stderr.pause();
    const chunk = Buffer.alloc(32 * 1024, 0x65);
    for (let i = 0; i < STREAM_WINDOW / chunk.length; i++) p.guest.write(encodeFrame(FrameType.DATA, s.id, chunk, 1));
    await new Promise((r) => setTimeout(r, 200));
    expect(p.frames.filter(isType(FrameType.WINDOW, s.id))).toHaveLength(0);
    let read = 0;
    s.stderr.on('data', (c: Buffer) => (read += c.length));
    s.stderr.resume();
    await p.next(isType(FrameType.WINDOW, s.id));
    await expect.poll(() => read).toBe(STREAM_WINDOW);
    expect(warnings).toEqual([]);
  });

  it('treats a guest that sends past its window as a protocol error (a flood cannot grow host memory)', async () => {
    const p = await ready();
    const s = p.mux.open({ kind: 'exec', argv: ['yes'], stdin: false });
    const failed = new Promise<Error>((r) => p.mux.on('error', r));
    s.pause();
    const chunk = Buffer.alloc(65_536);
    for (let i = 0; i <= STREAM_WINDOW / chunk.length; i++) p.guest.write(encodeFrame(FrameType.DATA, s.id, chunk));
    expect((await failed).message).toMatch(/past its window/);
  });

  it('delivers stdout, stderr, the exit status and the end of a command', async () => {
    const p = await ready();
    const s = p.mux.open({ kind: 'exec', argv: ['sh'], stdin: false });
    s.end();
    let out = '';
    let err = '';
    s.on('data', (c: Buffer) => (out += c.toString()));
    s.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise((r) => s.once('exit', r));
    const ended = new Promise((r) => s.once('end', r));
    p.guest.write(
      Buffer.concat([
        encodeFrame(FrameType.DATA, s.id, Buffer.from('out')),
        encodeFrame(FrameType.DATA, s.id, Buffer.from('err'), 1),
        encodeJsonFrame(FrameType.EXIT, s.id, { code: 7, signal: null }),
        encodeFrame(FrameType.CLOSE, s.id),
      ]),
    );
    expect(await exited).toEqual({ code: 7, signal: null });
    await ended;
    expect([out, err]).toEqual(['out', 'err']);
    await p.next(isType(FrameType.CLOSE, s.id));
  });

  it('hands guest-opened net streams over with their process, and resets one nobody takes', async () => {
    const p = await ready();
    p.guest.write(encodeJsonFrame(FrameType.OPEN, 2, { kind: 'net', process: 'curl', pid: 42 }));
    await p.next(isType(FrameType.RESET, 2));
    const taken = new Promise<MuxStream>((r) => p.mux.on('stream', r));
    p.guest.write(encodeJsonFrame(FrameType.OPEN, 4, { kind: 'net', process: 'curl', pid: 42 }));
    const s = await taken;
    expect(s.meta).toEqual({ kind: 'net', process: 'curl', pid: 42 });
    s.write('HTTP/1.1 200 OK\r\n\r\n');
    expect((await p.next(isType(FrameType.DATA, 4))).payload.toString()).toMatch(/^HTTP\/1.1 200/);
  });

  it('hands over transparent net streams with their destination and dns streams with their transport', async () => {
    const p = await ready();
    const taken: MuxStream[] = [];
    const three = new Promise<void>((r) => p.mux.on('stream', (s) => taken.push(s) === 3 && r()));
    p.guest.write(
      Buffer.concat([
        encodeJsonFrame(FrameType.OPEN, 2, { kind: 'net', process: 'python3', pid: 7, dst: { address: 'fd00:c5e3::c612:7', port: 443 } }),
        encodeJsonFrame(FrameType.OPEN, 4, { kind: 'dns', process: 'curl', pid: 8, transport: 'udp' }),
        encodeJsonFrame(FrameType.OPEN, 6, { kind: 'dns', process: null, pid: null, transport: 'tcp' }),
      ]),
    );
    await three;
    expect(taken.map((s) => s.meta)).toEqual([
      { kind: 'net', process: 'python3', pid: 7, destination: { address: 'fd00:c5e3::c612:7', port: 443 } },
      { kind: 'dns', process: 'curl', pid: 8, transport: 'udp' },
      { kind: 'dns', process: null, pid: null, transport: 'tcp' },
    ]);
  });

  it('resets an OPEN it cannot serve, saying why, and keeps serving the rest', async () => {
    const p = await ready();
    const taken: MuxStream[] = [];
    p.mux.on('stream', (s) => taken.push(s));
    const bad = [
      { kind: 'net', process: 'x', pid: 1, dst: { address: 'example.com', port: 443 } },
      { kind: 'net', process: 'x', pid: 1, dst: { address: '198.18.0.1', port: 0 } },
      { kind: 'net', process: 'x', pid: 1, dst: { address: '198.18.0.1', port: 1.5 } },
      { kind: 'net', process: 'x', pid: 1, dst: null },
      { kind: 'dns', process: 'x', pid: 1, transport: 'quic' },
      { kind: 'exec', argv: ['sh'] },
    ];
    p.guest.write(Buffer.concat(bad.map((open, i) => encodeJsonFrame(FrameType.OPEN, 2 * (i + 1), open))));
    const reasons = [];
    for (let i = 0; i < bad.length; i++) reasons.push((await p.next(isType(FrameType.RESET, 2 * (i + 1)))).payload.toString());
    expect(reasons).toEqual([
      ...new Array(4).fill('a net stream\'s dst must be {"address": an IP address, "port": 1 to 65535}'),
      'a dns stream names its transport, udp or tcp',
      'the guest may only open net and dns streams, not exec',
    ]);
    const served = new Promise<void>((r) => p.mux.on('stream', () => r()));
    p.guest.write(encodeJsonFrame(FrameType.OPEN, 20, { kind: 'net', process: 'curl', pid: 42 }));
    await served;
    expect(taken.map((s) => s.id)).toEqual([20]);
  });

  it('keeps only fs changes whose paths stay inside the workspace', async () => {
    const p = await ready();
    const seen = new Promise<unknown[]>((r) => p.mux.on('fs', (e) => r([...e])));
    const ev = (path: string) => ({ action: 'created', path, size: 1, is_dir: false, ts_ms: 1 });
    p.guest.write(
      encodeJsonFrame(FrameType.EVENT, 0, { type: 'fs', events: [ev('a/b.txt'), ev('/etc/passwd'), ev('../x'), ev('a/../../y')] }),
    );
    expect((await seen).map((e) => (e as { path: string }).path)).toEqual(['a/b.txt']);
  });
});
