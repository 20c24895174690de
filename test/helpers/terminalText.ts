import type { ChildProcessWithoutNullStreams } from 'node:child_process';
// A terminal's output as a person reads it, and waiting for something to show up on it: for the
// tests and the benchmark that drive a coding agent's full-screen terminal through capsem.

/** What a person sees of a terminal's output: its text without escape sequences. */
export function screenText(raw: string): string {
  // A TUI moves the cursor right instead of writing spaces: those become spaces here.
  const spaced = raw.replace(/\x1b\[(\d*)C/g, (_m, n: string) => ' '.repeat(Math.min(Number(n || '1'), 200)));
  return spaced.replace(/\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHM]/g, '');
}

export async function until<T>(what: string, found: () => T | undefined | false, timeoutMs: number, shown: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = found();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; the screen showed:\n${shown().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Claude Code at its prompt: its banner, the folder, then its input box's rule, drawn once it takes input. */
export const CLAUDE_PROMPT = /Claude Code[\s\S]*\/workspace[\s\S]*─{20}/;

/** A capsem command attached to a full-screen terminal, read as a person would and typed into as one would. */
export interface CapsemTerminal {
  /** The screen's text so far (screenText of stdout). */
  screen(): string;
  /** The screen and stderr, for a failure's message. */
  shown(): string;
  waitFor(what: string, pattern: RegExp, timeoutMs: number): Promise<void>;
  /** Types a line: the text, then Enter a moment later, as a TUI takes a paste and a key apart. */
  typeLine(text: string): Promise<void>;
  /** Resolves with the command's exit code (null when killed). */
  readonly exited: Promise<number | null>;
  /** Kills the command if it is still running, and waits for it. */
  close(): Promise<void>;
}

export function capsemTerminal(child: ChildProcessWithoutNullStreams): CapsemTerminal {
  let raw = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (raw += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const shown = (): string => `${screenText(raw)}\n--- stderr:\n${stderr}`;
  return {
    screen: () => screenText(raw),
    shown,
    waitFor: async (what, pattern, timeoutMs) => {
      await until(what, () => pattern.test(screenText(raw)), timeoutMs, shown);
    },
    typeLine: async (text) => {
      child.stdin.write(text);
      await new Promise((r) => setTimeout(r, 500));
      child.stdin.write('\r');
    },
    exited,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}
