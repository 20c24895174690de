import { spawnSync } from 'node:child_process';

/**
 * Every file under `path` holding `needle` byte for byte. grep streams each file (a session's disk
 * is a sparse image of gigabytes) and, with -r, follows no symlink out of `path`.
 */
export function filesHolding(path: string, needle: string): string[] {
  const r = spawnSync('grep', ['-rlaF', '--', needle, path], { encoding: 'utf8' });
  if (r.status === 2) throw new Error(`grep failed over ${path}: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean);
}
