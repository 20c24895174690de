import { join } from 'node:path';
import type { SessionPaths } from './paths.ts';

// A vacuumed session keeps its files gzip-compressed beside where they were: session.db.gz is a
// VACUUM INTO copy of the database (compact, no WAL), pty.log.gz and serial.log.gz the logs.
// session.db itself is gone, which is how `capsem list` knows to drop the `*`.

export interface VacuumedFiles {
  readonly dbGz: string;
  readonly ptyLogGz: string;
  readonly serialLogGz: string;
}

export function vacuumedFiles(paths: SessionPaths): VacuumedFiles {
  return {
    dbGz: join(paths.dir, 'session.db.gz'),
    ptyLogGz: join(paths.dir, 'pty.log.gz'),
    serialLogGz: join(paths.dir, 'serial.log.gz'),
  };
}
