import { SerializeAddon } from '@xterm/addon-serialize';
import xterm, { type ITerminalAddon, type Terminal } from '@xterm/headless';
import { TERMINAL_SCROLLBACK_LINES } from '../contract/appContract.ts';

// A live session's terminal as the guest's output has built it, kept on the host by a headless
// xterm.js: a window or `capsem shell NAME` that attaches again is first sent this (its screen and
// scrollback as escape sequences), so it shows what was there instead of a blank screen. Its
// memory is the scrollback the window keeps, whatever the shell prints.

/** Output handed to the parser and not parsed yet past which the pty waits for it (xterm drops data past 50 MB). */
const BACKLOG_LIMIT = 1 << 20;

export class TerminalScreen {
  private readonly terminal: Terminal;
  private readonly serializer = new SerializeAddon();
  private backlog = 0;
  private readonly caughtUp: (() => void)[] = [];
  /** Snapshots waiting for the parser; answered '' if the screen goes first (xterm drops their callbacks). */
  private readonly snapshots = new Set<(text: string) => void>();
  private disposed = false;

  constructor(size: { cols: number; rows: number }, scrollback = TERMINAL_SCROLLBACK_LINES) {
    this.terminal = new xterm.Terminal({ cols: size.cols, rows: size.rows, scrollback, allowProposedApi: true });
    // The addon is typed against @xterm/xterm's Terminal; the headless one has what it uses.
    this.terminal.loadAddon(this.serializer as unknown as ITerminalAddon);
  }

  /** Takes the guest's output in; a promise while the parser is more than BACKLOG_LIMIT behind, settled once it is back under. */
  write(chunk: Buffer): Promise<void> | undefined {
    if (this.disposed) return undefined;
    this.backlog += chunk.length;
    this.terminal.write(chunk, () => {
      this.backlog -= chunk.length;
      if (this.backlog <= BACKLOG_LIMIT) for (const resume of this.caughtUp.splice(0)) resume();
    });
    return this.backlog > BACKLOG_LIMIT ? new Promise((resolve) => this.caughtUp.push(resolve)) : undefined;
  }

  resize(cols: number, rows: number): void {
    if (this.disposed) return;
    if (cols !== this.terminal.cols || rows !== this.terminal.rows) this.terminal.resize(cols, rows);
  }

  /** Screen, scrollback, cursor and modes as escape sequences, once all output written so far is parsed. */
  snapshot(): Promise<string> {
    if (this.disposed) return Promise.resolve('');
    return new Promise((resolve) => {
      this.snapshots.add(resolve);
      this.terminal.write('', () => {
        if (!this.snapshots.delete(resolve)) return;
        resolve(this.serializer.serialize());
      });
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.terminal.dispose();
    for (const resume of this.caughtUp.splice(0)) resume();
    for (const resolve of this.snapshots) resolve('');
    this.snapshots.clear();
  }
}
