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
