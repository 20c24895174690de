import { Duplex } from 'node:stream';
import type { MuxStream } from './mux.ts';

// One viewer's attachment to a session's shell (the window, or `capsem shell NAME`): a stream of
// its own whose output is the guest's pty output from the moment the viewer was shown the screen.
// Every chunk passes through the session's record (the transcript and the host's copy of the
// screen) before the viewer gets it, and is read from the guest only as fast as both the record
// and the viewer take it in, so a flood waits in the guest. When another viewer attaches, this one
// ends and the rest of its guest stream goes to the record alone, so the next screen has it all.

/** Where every chunk of the shell's output is kept; a promise while it is behind. */
export type PtyRecord = (chunk: Buffer) => Promise<void> | undefined;

export class PtyView extends Duplex {
  private wanted = false;
  private recordBehind = false;
  private serving = false;
  private retired = false;
  private readonly done: Promise<void>;

  /** Starts reading `source` once `ready` settles (after the screen the viewer is shown first was taken). */
  constructor(
    private readonly source: MuxStream,
    private readonly record: PtyRecord,
    ready: Promise<unknown>,
  ) {
    super({ allowHalfOpen: true });
    this.done = new Promise((resolve) => {
      source.once('end', () => resolve());
      source.once('close', () => resolve());
    });
    source.on('readable', () => this.pump());
    source.on('end', () => {
      // A retired view's consumer may never end its side: close the guest stream for it.
      if (this.retired) {
        if (!this.source.writableEnded && !this.source.destroyed) this.source.end();
      } else this.push(null);
    });
    source.on('exit', (status) => this.emit('exit', status));
    // A stream the guest reset or the mux lost: the viewer sees its terminal close, never an error to crash on.
    source.on('error', () => undefined);
    source.on('close', () => {
      if (!source.readableEnded && !this.retired) this.destroy();
    });
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
   * record alone. Resolves once the guest stream has ended, or after `graceMs`, when it is dropped.
   */
  retire(graceMs = 2000): Promise<void> {
    if (!this.retired) {
      this.retired = true;
      this.serving = true;
      this.push(null);
      this.pump();
      const timer = setTimeout(() => this.source.destroy(), graceMs);
      timer.unref();
      void this.done.then(() => clearTimeout(timer));
    }
    return this.done;
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    // Keystrokes for a shell that is gone are dropped, as a terminal drops them.
    if (this.retired || this.source.destroyed || this.source.writableEnded) return callback();
    this.source.write(chunk, () => callback());
  }

  override _final(callback: (err?: Error | null) => void): void {
    if (!this.source.destroyed && !this.source.writableEnded) this.source.end();
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.retired) this.source.destroy();
    callback(err);
  }

  private pump(): void {
    if (!this.serving) return;
    while (!this.recordBehind && (this.retired || this.wanted)) {
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
      if (!this.retired && !this.destroyed) this.wanted = this.push(chunk);
    }
  }
}
