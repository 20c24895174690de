// A commit that fails because of the disk, not the rows: the file or the disk under it cannot take
// any write (full, failing, read-only, gone, damaged). Redoing such a batch row by row only fails
// again, once per row, and reports every row as refused, so the writer tells the two apart.

const DISK_LEVEL = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB|NOLFS|PERM)(_|$)/;

/** Why session.db cannot be written ("cannot write session.db: database or disk is full"), or null when `err` concerns the rows. */
export function diskFailure(err: unknown): string | null {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !DISK_LEVEL.test(code)) return null;
  return `cannot write session.db: ${(err as Error).message}`;
}

const counted = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** What a session lost to a disk failure, in one line: main.db's reason, the CLI's message and `capsem check` say the same. */
export function lossReport(reason: string, rows: number, exchanges: number): string {
  return `${reason}; ${counted(exchanges, 'exchange', 'exchanges')} (${counted(rows, 'row', 'rows')}) not recorded`;
}
