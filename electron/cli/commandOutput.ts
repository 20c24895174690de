import type { Writable } from 'node:stream';

// A VM command's stdout and stderr as the consumer that paces the guest. Node buffers writes to a
// pipe without limit, so a write that finds the pipe full returns a promise: the control
// connection is not read until it settles, and the hold reaches back through the owner to the
// guest's credit. A reader that went away (EPIPE, as after `| head -1`) is reported once, so the
// command can stop its VM in order and exit as a shell expects.

/** The exit status after stdout's reader went away: 128 + SIGPIPE, as for a command killed by it. */
export const BROKEN_PIPE_EXIT = 141;

export interface CommandOutput {
  /** Writes to stdout; a promise while stdout is full, settled once it drains or breaks. */
  stdout(bytes: Buffer): Promise<void> | undefined;
  /** The same for stderr. */
  stderr(bytes: Buffer): Promise<void> | undefined;
  /** Resolves when stdout's reader has gone away; nothing more is written to it. */
  readonly broken: Promise<void>;
}

export function commandOutput(stdout: Writable = process.stdout, stderr: Writable = process.stderr): CommandOutput {
  let brokenNow!: () => void;
  const broken = new Promise<void>((resolve) => (brokenNow = resolve));
  return {
    stdout: pacedWriter(stdout, () => brokenNow()),
    // A stderr that breaks too (`2>&1 | head`) has nobody left to tell: its writes stop quietly.
    stderr: pacedWriter(stderr, () => undefined),
    broken,
  };
}

function pacedWriter(stream: Writable, onBroken: () => void): (bytes: Buffer) => Promise<void> | undefined {
  let gone = false;
  stream.on('error', () => {
    if (gone) return;
    gone = true;
    onBroken();
  });
  return (bytes) => {
    if (gone || stream.write(bytes)) return undefined;
    return new Promise((resolve) => {
      const done = (): void => {
        stream.off('drain', done);
        stream.off('error', done);
        stream.off('close', done);
        resolve();
      };
      stream.once('drain', done);
      stream.once('error', done);
      stream.once('close', done);
    });
  };
}
