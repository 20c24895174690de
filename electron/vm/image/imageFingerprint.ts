import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Hashing an image's inputs (kernel, modules through modinfo, busybox, agent) costs about half a
// second, on every boot. Their size and modification time are a cheap fingerprint: when it is the
// one recorded with a built image, that image's hash is reused. Any change to any input makes a
// new fingerprint, and the full hash decides again.

const FILE = '.fingerprints.json';

export function fingerprint(parts: readonly string[], paths: readonly string[]): string {
  const stats = paths.map((path) => {
    try {
      const s = statSync(path);
      return `${path}:${s.size}:${s.mtimeMs}`;
    } catch {
      return `${path}:missing`;
    }
  });
  return JSON.stringify([...parts, ...stats]);
}

function read(imagesDir: string): Record<string, { fingerprint: string; hash: string }> {
  const path = join(imagesDir, FILE);
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, { fingerprint: string; hash: string }>;
  } catch {
    return {};
  }
}

/** The hash recorded for this fingerprint, or null. */
export function knownHash(imagesDir: string, kind: string, print: string): string | null {
  const entry = read(imagesDir)[kind];
  return entry && entry.fingerprint === print ? entry.hash : null;
}

export function rememberHash(imagesDir: string, kind: string, print: string, hash: string): void {
  const all = read(imagesDir);
  all[kind] = { fingerprint: print, hash };
  writeFileSync(join(imagesDir, FILE), JSON.stringify(all), { mode: 0o600 });
}
