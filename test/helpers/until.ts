// Waiting in a test for something another process does: polled, with a deadline that names what
// never came, so a hang fails with a reason instead of the test's own timeout.

export async function until<T>(what: string, probe: () => T | null | undefined | false, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
