import { afterEach, describe, expect, it } from 'vitest';
import { encodeFrame, FrameType } from '../../../electron/vm/frame.ts';
import { STREAM_WINDOW, type MuxStream } from '../../../electron/vm/mux.ts';
import { PtyView } from '../../../electron/vm/ptyView.ts';
import { isFrame, scriptedGuestReady, type ScriptedGuest } from '../../helpers/scriptedGuest.ts';

// A viewer's attachment to the shell against a scripted guest: whatever the guest sent on a
// viewer's stream reaches the session's record (the next screen and the transcript), however the
// viewer goes and however far behind the record is.

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function shellStream(): Promise<{ guest: ScriptedGuest; source: MuxStream }> {
  const guest = await scriptedGuestReady();
  cleanups.push(guest.close);
  const source = guest.mux.open({ kind: 'pty', cols: 80, rows: 24, term: 'xterm-256color' });
  await guest.next(isFrame(FrameType.OPEN, source.id));
  return { guest, source };
}

/** The session's record: what it was given, in order; `slowFirst` ms behind on its first chunk, as a parser with a backlog is. */
function record(slowFirst = 0): { chunks: Buffer[]; text: () => string; take: (chunk: Buffer) => Promise<void> | undefined } {
  const chunks: Buffer[] = [];
  return {
    chunks,
    text: () => Buffer.concat(chunks).toString(),
    take: (chunk) => {
      chunks.push(chunk);
      return chunks.length === 1 && slowFirst > 0 ? new Promise((r) => setTimeout(r, slowFirst)) : undefined;
    },
  };
}

const output = (from: number, to: number): string => Array.from({ length: to - from }, (_, i) => `line ${from + i}\r\n`).join('');

describe('PtyView', () => {
  it('records all a retired stream carried once the guest closed it, however long the record takes past the grace', async () => {
    const { guest, source } = await shellStream();
    const kept = record(400);
    const view = new PtyView(source, kept.take, Promise.resolve());
    view.resume();
    guest.guest.write(encodeFrame(FrameType.DATA, source.id, Buffer.from(output(0, 100))));
    await expect.poll(() => kept.chunks.length).toBe(1);
    // The rest arrives, and the guest closes the stream (another viewer attached), while the record is still behind.
    guest.guest.write(
      Buffer.concat([
        encodeFrame(FrameType.DATA, source.id, Buffer.from(output(100, 5000))),
        encodeFrame(FrameType.DATA, source.id, Buffer.from(output(5000, 10_000))),
        encodeFrame(FrameType.CLOSE, source.id),
      ]),
    );
    await expect.poll(() => source.remoteClosed).toBe(true);
    await view.retire(50);
    expect(kept.text()).toBe(output(0, 10_000));
    expect(guest.frames.filter(isFrame(FrameType.RESET, source.id))).toEqual([]);
  });

  it('keeps recording what the guest sent after its viewer went, grants it no more, and hands the stream over at the next attach', async () => {
    const { guest, source } = await shellStream();
    const kept = record();
    const view = new PtyView(source, kept.take, Promise.resolve());
    // A window behind on its drawing reads nothing: the guest's output waits in the host's stream.
    const inFlight = Buffer.from(output(0, 2000));
    guest.guest.write(encodeFrame(FrameType.DATA, source.id, inFlight));
    await expect.poll(() => source.readableLength).toBe(inFlight.length);
    expect(kept.chunks).toEqual([]);
    view.destroy();
    // What the guest was granted before the viewer went still comes, a quarter window and more.
    const after = Buffer.from('x'.repeat(STREAM_WINDOW / 2 - inFlight.length));
    for (let at = 0; at < after.length; at += 65_536)
      guest.guest.write(encodeFrame(FrameType.DATA, source.id, after.subarray(at, at + 65_536)));
    await expect.poll(() => kept.text().length).toBe(inFlight.length + after.length);
    expect(kept.text()).toBe(inFlight.toString() + after.toString());
    await new Promise((r) => setTimeout(r, 100));
    expect(guest.frames.filter((f) => f.stream === source.id && f.type !== FrameType.DATA)).toEqual([]);
    // The next attach: the agent moves the shell to the new stream and closes this one.
    const released = view.retire(50);
    guest.guest.write(encodeFrame(FrameType.CLOSE, source.id));
    await released;
    expect((await guest.next(isFrame(FrameType.CLOSE, source.id))).stream).toBe(source.id);
  });

  it('records a view that has not been shown its screen yet only once that screen is taken', async () => {
    const { guest, source } = await shellStream();
    const kept = record();
    let shown!: () => void;
    const view = new PtyView(source, kept.take, new Promise<void>((r) => (shown = r)));
    guest.guest.write(encodeFrame(FrameType.DATA, source.id, Buffer.from(output(0, 10))));
    view.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect(kept.chunks).toEqual([]);
    shown();
    await expect.poll(() => kept.text()).toBe(output(0, 10));
  });
});
