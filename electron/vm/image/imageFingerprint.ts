import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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

/** Entries kept: the images cache is shared by app versions and homes, each with its own inputs. */
const KEPT = 8;

interface Entry {
  readonly kind: string;
  readonly fingerprint: string;
  readonly hash: string;
}

function read(imagesDir: string): Entry[] {
  const path = join(imagesDir, FILE);
  if (!existsSync(path)) return [];
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    // The file of older versions was an object keyed by kind: not worth reading, it is rebuilt in half a second.
    return Array.isArray(parsed) ? (parsed as Entry[]) : [];
  } catch {
    return [];
  }
}

/** The hash recorded for this fingerprint, or null. */
export function knownHash(imagesDir: string, kind: string, print: string): string | null {
  return read(imagesDir).find((e) => e.kind === kind && e.fingerprint === print)?.hash ?? null;
}

/** Records the newest first, keeping KEPT; written whole (tmp + rename), as other processes read it at any time. */
export function rememberHash(imagesDir: string, kind: string, print: string, hash: string): void {
  const others = read(imagesDir).filter((e) => !(e.kind === kind && e.fingerprint === print));
  const path = join(imagesDir, FILE);
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, JSON.stringify([{ kind, fingerprint: print, hash }, ...others].slice(0, KEPT)), { mode: 0o600 });
  renameSync(tmp, path);
}
