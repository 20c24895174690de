import { existsSync, statSync } from 'node:fs';

/** The bytes the files at `paths` take, a missing one counting as none. */
export function sizeOf(paths: readonly string[]): number {
  return paths.reduce((sum, p) => sum + (existsSync(p) ? statSync(p).size : 0), 0);
}
