import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeJsonFrame, FrameDecoder, FrameType, PROTOCOL_VERSION, type Frame } from '../../electron/vm/frame.ts';
import { AgentMux } from '../../electron/vm/mux.ts';

// The host mux against a scripted guest on a real unix socket pair: the test writes the guest's
// frames one by one and reads what the host sent, so each rule of the protocol is exercised on its own.

export interface ScriptedGuest {
  readonly mux: AgentMux;
  /** The guest's end of the port: write frames here. */
  readonly guest: Socket;
  /** Frames the host sent that no `next` has taken yet. */
  readonly frames: Frame[];
  /** The first frame the host sent (or sends within `timeoutMs`) that matches, taken out of `frames`. */
  next(pred: (f: Frame) => boolean, timeoutMs?: number): Promise<Frame>;
  close(): void;
}

export const isFrame =
  (type: FrameType, stream?: number) =>
  (f: Frame): boolean =>
    f.type === type && (stream === undefined || f.stream === stream);

/** A mux and its scripted guest, before the hello. */
export async function scriptedGuest(): Promise<ScriptedGuest> {
  const dir = mkdtempSync(join(tmpdir(), 'capsem-mux-'));
  const path = join(dir, 'mux.sock');
  const server = createServer();
  await new Promise<void>((r) => server.listen(path, r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const guest = createConnection(path);
  const hostSide = await accepted;
  const mux = new AgentMux(hostSide);
  mux.on('error', () => {});
  const decoder = new FrameDecoder();
  const frames: Frame[] = [];
  const waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  guest.on('data', (chunk: Buffer) => {
    for (const f of decoder.push(chunk)) {
      frames.push(f);
      const i = waiters.findIndex((w) => w.pred(f));
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(f);
    }
  });
  const next = (pred: (f: Frame) => boolean, timeoutMs = 2000): Promise<Frame> => {
    const seen = frames.find(pred);
    if (seen) {
      frames.splice(frames.indexOf(seen), 1);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('frame not seen')), timeoutMs);
      waiters.push({ pred, resolve: (f) => (clearTimeout(timer), frames.splice(frames.indexOf(f), 1), resolve(f)) });
    });
  };
  const close = (): void => {
    mux.close();
    guest.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { mux, guest, frames, next, close };
}

/** A mux and its scripted guest once the guest said hello and was answered. */
export async function scriptedGuestReady(): Promise<ScriptedGuest> {
  const p = await scriptedGuest();
  const hello = p.mux.handshake(2000);
  p.guest.write(encodeJsonFrame(FrameType.HELLO, 0, { protocol: PROTOCOL_VERSION, role: 'guest', agent: 'test' }));
  await hello;
  await p.next(isFrame(FrameType.HELLO));
  return p;
}
