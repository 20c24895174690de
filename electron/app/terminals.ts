import { StringDecoder } from 'node:string_decoder';
import type { Transcript, TranscriptPart } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import { readTranscriptChunk } from '../vm/ptyTranscript.ts';
import type { PtyAttachment, VmSession } from '../vm/vmSession.ts';
import { CallFailure } from './callFailure.ts';

// The window's terminals: a live session's screen as it stands (`terminal.screen`), then its pty
// as `terminal.output` events (UTF-8 text, decoded across chunk boundaries) and `terminal.exit`,
// keystrokes and resizes back; an ended session's transcript for replay, in chunks the window
// asks for one after the other. One attachment per session: a second attach replaces the first.

export interface TerminalSink {
  /** What the terminal shows as the window attaches: the window draws it in place of what it had. */
  screen(id: SessionId, data: string): void | Promise<void>;
  /** A promise while the window showing it is behind: the shell's output waits until it settles. */
  output(id: SessionId, data: string): void | Promise<void>;
  exit(id: SessionId, code: number | null): void;
}

/**
 * Characters sent to the window ahead of what it has said it drew (terminal.ack). Past it the
 * shell waits: a window that stops drawing (hung, or an Electron renderer, whose IPC has no
 * back-pressure of its own) stops the guest instead of filling the host with its output.
 */
export const UNDRAWN_WINDOW = 1 << 20;

interface Attached {
  readonly pty: PtyAttachment;
  /** Set when the window detached, so the pty's close is not reported as the shell exiting. */
  detached: boolean;
  /** Characters sent and not yet acknowledged as drawn. */
  undrawn: number;
  /** Holds that end once the window has drawn its way back under half the window. */
  readonly drawnWaiters: (() => void)[];
}

export class Terminals {
  private readonly attached = new Map<SessionId, Attached>();

  constructor(private readonly sink: TerminalSink) {}

  /** Resolves once the screen is sent; the output follows it. */
  async attachLive(session: VmSession, size: { cols: number; rows: number }): Promise<void> {
    this.detach(session.id);
    const pty = session.attachPty(size);
    const entry: Attached = { pty, detached: false, undrawn: 0, drawnWaiters: [] };
    this.attached.set(session.id, entry);
    const decoder = new StringDecoder('utf8');
    let code: number | null = null;
    let reported = false;
    const finish = (): void => {
      if (reported) return;
      reported = true;
      const rest = decoder.end();
      if (rest !== '' && !entry.detached) this.sink.output(session.id, rest);
      if (this.attached.get(session.id) === entry) this.attached.delete(session.id);
      if (!entry.detached) this.sink.exit(session.id, code);
    };
    // A window that is behind (its transport full, or its drawing) holds the shell: the paused
    // pty stops the guest's credit, so a flood (`yes`, `cat` of a large file) waits in the guest,
    // not in host memory.
    let behind = 0;
    const hold = (caughtUp: Promise<void>): void => {
      if (behind++ === 0) pty.stream.pause();
      void caughtUp.then(() => {
        if (--behind === 0) pty.stream.resume();
      });
    };
    const shown = (caughtUp: void | Promise<void>, chars: number): void => {
      if (caughtUp) hold(caughtUp);
      entry.undrawn += chars;
      if (entry.undrawn > UNDRAWN_WINDOW) hold(new Promise((resolve) => entry.drawnWaiters.push(resolve)));
    };
    pty.stream.on('exit', (status: { code: number | null }) => (code = status.code));
    // The guest closing its side ends the readable half; close ours so the stream is done.
    pty.stream.on('end', () => {
      pty.stream.end();
      finish();
    });
    pty.stream.on('error', () => finish());
    pty.stream.on('close', finish);
    const screen = await pty.screen;
    if (entry.detached) return;
    shown(this.sink.screen(session.id, screen), screen.length);
    pty.stream.on('data', (chunk: Buffer) => {
      const text = decoder.write(chunk);
      if (text === '' || entry.detached) return;
      shown(this.sink.output(session.id, text), text.length);
    });
  }

  private entry(id: SessionId): Attached {
    const entry = this.attached.get(id);
    if (!entry) throw new CallFailure('not_attached', `no live terminal is attached for session ${id}; call terminal.attach first`);
    return entry;
  }

  input(id: SessionId, data: string): void {
    this.entry(id).pty.stream.write(data);
  }

  /** The window drew this many more characters of the output; an acknowledgement for a terminal gone since is no error. */
  drawn(id: SessionId, chars: number): void {
    const entry = this.attached.get(id);
    if (!entry) return;
    entry.undrawn = Math.max(0, entry.undrawn - chars);
    if (entry.undrawn <= UNDRAWN_WINDOW / 2) for (const resume of entry.drawnWaiters.splice(0)) resume();
  }

  resize(id: SessionId, cols: number, rows: number): void {
    this.entry(id).pty.resize(cols, rows);
  }

  detach(id: SessionId): void {
    const entry = this.attached.get(id);
    if (!entry) return;
    entry.detached = true;
    this.attached.delete(id);
    entry.pty.stream.destroy();
  }

  detachAll(): void {
    for (const id of [...this.attached.keys()]) this.detach(id);
  }
}

/**
 * An ended session's terminal as recorded, its first chunk: the rest comes a chunk at a time from
 * `recordedTranscriptPart`, as fast as the window takes it in. Empty when it never had one.
 */
export async function recordedTranscript(ptyLogPath: string): Promise<Transcript> {
  const { header, events, next } = await readTranscriptChunk(ptyLogPath, 0);
  return { width: header?.width ?? 80, height: header?.height ?? 24, events: events.map(([t, code, data]) => [t, code, data]), next };
}

/** The chunk of a recorded terminal that starts at byte `from` (a previous chunk's `next`). */
export async function recordedTranscriptPart(ptyLogPath: string, from: number): Promise<TranscriptPart> {
  const { events, next } = await readTranscriptChunk(ptyLogPath, from);
  return { events: events.map(([t, code, data]) => [t, code, data]), next };
}
