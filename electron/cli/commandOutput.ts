import type { Writable } from 'node:stream';

// The CLI's stdout and stderr, made once per process (main.ts) and shared by every command. Node
// buffers writes to a pipe without limit, so a write that finds the pipe full returns a promise: a
// VM command holds its control connection until it settles, and the hold reaches back through the
// owner to the guest's credit; `capsem sql` holds its next rows. A stdout that fails (EPIPE after
// `| head -1`, ENOSPC on `>/dev/full`) is reported once, with the exit status that says so, and
// nothing more is written to it; a command that streams stops at its next write (OutputGone).

/** The exit status after stdout's reader went away: 128 + SIGPIPE, as for a command killed by it. */
export const BROKEN_PIPE_EXIT = 141;

/** The exit status after stdout failed otherwise (a full disk, an I/O error): as for any failed command. */
export const OUTPUT_FAILED_EXIT = 1;

/** Why stdout takes nothing more, and how the command exits for it. */
export interface OutputLoss {
  readonly exitCode: number;
  /** What to tell the user on stderr; null when the reader went away, which a shell passes over in silence. */
  readonly message: string | null;
}

/** Thrown by CommandOutput.send once stdout takes nothing more: the command ends with the loss's exit status. */
export class OutputGone extends Error {
  override name = 'OutputGone';
  constructor(readonly loss: OutputLoss) {
    super(loss.message ?? 'nothing reads the output any more');
  }
}

export interface CommandOutput {
  /** Writes to stdout; a promise while stdout is full, settled once it drains or fails. */
  stdout(bytes: Buffer | string): Promise<void> | undefined;
  /** The same for stderr. */
  stderr(bytes: Buffer | string): Promise<void> | undefined;
  /** Writes to stdout and resolves once it may take more; rejects with OutputGone when it takes nothing more, so a loop producing output ends there. */
  send(text: string): Promise<void>;
  /** Resolves when stdout takes nothing more (its reader went away, or a write failed). */
  readonly broken: Promise<OutputLoss>;
  /** That loss, or null while stdout is writable. */
  loss(): OutputLoss | null;
}

/** The loss a stream's failure means; null for one closed without an error, which nobody reads either. */
function lossOf(err: NodeJS.ErrnoException | null): OutputLoss {
  if (err === null || err.code === 'EPIPE') return { exitCode: BROKEN_PIPE_EXIT, message: null };
  return { exitCode: OUTPUT_FAILED_EXIT, message: `cannot write the output: ${err.message}` };
}

export function commandOutput(stdout: Writable = process.stdout, stderr: Writable = process.stderr): CommandOutput {
  let lost: OutputLoss | null = null;
  let brokenNow!: (loss: OutputLoss) => void;
  const broken = new Promise<OutputLoss>((resolve) => (brokenNow = resolve));
  const toStdout = pacedWriter(stdout, (err) => {
    lost = lossOf(err);
    brokenNow(lost);
  });
  return {
    stdout: toStdout,
    // A stderr that breaks too (`2>&1 | head`, `2>/dev/full`) has nobody left to tell: its writes stop quietly.
    stderr: pacedWriter(stderr, () => undefined),
    async send(text) {
      // A write that fails says so on a later tick: give it that tick before the next page is made.
      if (!lost) await (toStdout(text) ?? new Promise((resolve) => setImmediate(resolve)));
      if (lost) throw new OutputGone(lost);
    },
    broken,
    loss: () => lost,
  };
}

function pacedWriter(
  stream: Writable,
  onGone: (err: NodeJS.ErrnoException | null) => void,
): (bytes: Buffer | string) => Promise<void> | undefined {
  let gone = false;
  /** The one wait for the stream to drain, shared by every write made while it is full. */
  let full: Promise<void> | null = null;
  const goneNow = (err: NodeJS.ErrnoException | null): void => {
    if (gone) return;
    gone = true;
    onGone(err);
  };
  stream.on('error', goneNow);
  // Closed without an error (a pipe to a child that exited, destroyed then) it takes nothing either,
  // and a write to it neither fails nor drains.
  stream.on('close', () => goneNow(null));
  return (bytes) => {
    if (gone || stream.destroyed) return undefined;
    if (full) {
      stream.write(bytes);
      return full;
    }
    if (stream.write(bytes)) return undefined;
    full = new Promise((resolve) => {
      const done = (): void => {
        stream.off('drain', done);
        stream.off('error', done);
        stream.off('close', done);
        full = null;
        resolve();
      };
      stream.once('drain', done);
      stream.once('error', done);
      stream.once('close', done);
    });
    return full;
  };
}
