import { Duplex } from 'node:stream';
import type { MuxStream } from './mux.ts';

// One viewer's attachment to a session's shell (the window, or `capsem shell NAME`): a stream of
// its own whose output is the guest's pty output from the moment the viewer was shown the screen.
// Every chunk passes through the session's record (the transcript and the host's copy of the
// screen) before the viewer gets it, and is read from the guest only as fast as both the record
// and the viewer take it in, so a flood waits in the guest. When the viewer goes, or another
// viewer attaches, this one's output ends and what its guest stream still carries goes to the
// record alone, so the next screen has it all.

/** Where every chunk of the shell's output is kept; a promise while it is behind. */
export type PtyRecord = (chunk: Buffer) => Promise<void> | undefined;

export class PtyView extends Duplex {
  private wanted = false;
  private recordBehind = false;
  private serving = false;
  /** The viewer has gone or another one took the shell: the guest stream goes to the record alone. */
  private recordOnly = false;
  private graceArmed = false;
  /** Settles once the guest stream has ended or been dropped: from then on the shell's output is another stream's. */
  readonly released: Promise<void>;

  /** Starts reading `source` once `ready` settles (after the screen the viewer is shown first was taken). */
  constructor(
    private readonly source: MuxStream,
    private readonly record: PtyRecord,
    ready: Promise<unknown>,
  ) {
    super({ allowHalfOpen: true });
    this.released = new Promise((resolve) => {
      source.once('end', () => resolve());
      source.once('close', () => resolve());
    });
    source.on('readable', () => this.pump());
    source.on('end', () => {
      // A view recording alone may have no consumer to end its side: close the guest stream for it.
      if (this.recordOnly) {
        if (!this.source.writableEnded && !this.source.destroyed) this.source.end();
      } else this.push(null);
    });
    source.on('exit', (status) => this.emit('exit', status));
    // A stream the guest reset or the mux lost: the viewer sees its terminal close, never an error to crash on.
    source.on('error', () => undefined);
    source.on('close', () => {
      if (!source.readableEnded && !this.recordOnly) this.destroy();
    });
    // Not before `ready`, even once the view records alone: the stream before this one must be
    // recorded to its end first, or the record would hold the two interleaved.
    const serve = (): void => {
      this.serving = true;
      this.pump();
    };
    void ready.then(serve, serve);
  }

  resize(cols: number, rows: number): void {
    this.source.resize(cols, rows);
  }

  /**
   * Another viewer takes the shell: this one's output ends now, and what its guest stream still
   * carries (at most the guest's window, sent before the agent moved to the new stream) goes to the
   * record alone. Resolves once the guest stream has ended and all it sent is recorded; a guest that
   * has not closed its side after `graceMs` is waited for no longer, and what it still sends is dropped.
   */
  retire(graceMs = 2000): Promise<void> {
    this.recordAlone();
    if (!this.graceArmed) {
      this.graceArmed = true;
      // The grace bounds the guest's answer, not the host's own recording of what it already sent.
      const timer = setTimeout(() => {
        if (!this.source.remoteClosed) this.source.destroy();
      }, graceMs);
      timer.unref();
      void this.released.then(() => clearTimeout(timer));
    }
    return this.released;
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    // Keystrokes for a shell that is gone are dropped, as a terminal drops them.
    if (this.recordOnly || this.source.destroyed || this.source.writableEnded) return callback();
    this.source.write(chunk, () => callback());
  }

  override _final(callback: (err?: Error | null) => void): void {
    if (!this.source.destroyed && !this.source.writableEnded) this.source.end();
    callback();
  }

  /**
   * The viewer has gone (its window closed, `capsem shell` disconnected): what the guest already
   * sent still goes to the record, so the next screen and the transcript have it, and the guest is
   * granted no more, so the shell waits in the guest as it does for a slow viewer, until the next
   * viewer attaches.
   */
  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.recordOnly) {
      this.source.withholdCredit();
      this.recordAlone();
    }
    callback(err);
  }

  private recordAlone(): void {
    if (this.recordOnly) return;
    this.recordOnly = true;
    if (!this.destroyed) this.push(null);
    this.pump();
  }

  private pump(): void {
    if (!this.serving) return;
    while (!this.recordBehind && (this.recordOnly || this.wanted)) {
      const chunk = this.source.read() as Buffer | null;
      if (chunk === null) return;
      const behind = this.record(chunk);
      if (behind) {
        this.recordBehind = true;
        void behind.then(() => {
          this.recordBehind = false;
          this.pump();
        });
      }
      if (!this.recordOnly && !this.destroyed) this.wanted = this.push(chunk);
    }
  }
}
