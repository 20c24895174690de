/** The sessions `capsem dev seed` printed, one `ID NAME ...` line each, as its first `count` lines. */
export function seededSessions(stdout: string, count: number): { id: string; name: string }[] {
  return stdout
    .trim()
    .split('\n')
    .slice(0, count)
    .map((line) => {
      const [id, name] = line.split(/\s+/);
      return { id: id!, name: name! };
    });
}
