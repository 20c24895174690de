/**
 * Writes an initramfs archive (cpio "newc", the format the kernel unpacks) from a list of entries.
 * Writing it ourselves instead of `find | cpio` lets the archive hold /dev/console (the kernel opens
 * it for init's stdio before init can mount devtmpfs) without mknod, so without root; and every
 * entry is owned by root with a fixed mtime, so the same inputs give the same bytes.
 */

export type CpioEntry =
  | { readonly type: 'dir'; readonly path: string; readonly mode?: number }
  | { readonly type: 'file'; readonly path: string; readonly data: Uint8Array; readonly mode?: number }
  | { readonly type: 'symlink'; readonly path: string; readonly target: string }
  | { readonly type: 'chardev'; readonly path: string; readonly major: number; readonly minor: number; readonly mode?: number };

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFCHR = 0o020000;
const TRAILER = 'TRAILER!!!';

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function pad4(length: number): number {
  return (4 - (length % 4)) % 4;
}

function header(fields: {
  ino: number;
  mode: number;
  nlink: number;
  size: number;
  rdevMajor: number;
  rdevMinor: number;
  nameSize: number;
}): string {
  // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check
  return (
    '070701' +
    [fields.ino, fields.mode, 0, 0, fields.nlink, 0, fields.size, 0, 0, fields.rdevMajor, fields.rdevMinor, fields.nameSize, 0]
      .map(hex8)
      .join('')
  );
}

function record(chunks: Buffer[], name: string, fields: Omit<Parameters<typeof header>[0], 'nameSize' | 'size'>, data: Uint8Array): void {
  const nameBytes = Buffer.from(`${name}\0`, 'utf8');
  const head = Buffer.from(header({ ...fields, size: data.length, nameSize: nameBytes.length }), 'ascii');
  chunks.push(head, nameBytes, Buffer.alloc(pad4(head.length + nameBytes.length)));
  if (data.length > 0) chunks.push(Buffer.from(data.buffer, data.byteOffset, data.length), Buffer.alloc(pad4(data.length)));
}

function normalise(path: string): string {
  const clean = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (clean.length === 0 || clean.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    throw new Error(`bad initramfs path: ${JSON.stringify(path)}`);
  }
  return clean;
}

/**
 * Entries are sorted by path so each directory precedes what it holds (the kernel does not create
 * parents), and the parents of every entry are added as 0755 directories when missing.
 */
export function writeNewc(entries: readonly CpioEntry[]): Buffer {
  const byPath = new Map<string, CpioEntry>();
  const implied = new Set<string>();
  for (const entry of entries) {
    const path = normalise(entry.path);
    // A directory given explicitly (with its mode) may follow one implied by an earlier child.
    if (byPath.has(path) && !(implied.has(path) && entry.type === 'dir')) throw new Error(`duplicate initramfs path: ${path}`);
    implied.delete(path);
    byPath.set(path, { ...entry, path });
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i += 1) {
      const parent = parts.slice(0, i).join('/');
      const existing = byPath.get(parent);
      if (existing && existing.type !== 'dir') throw new Error(`initramfs path ${parent} is both a ${existing.type} and a directory`);
      if (!existing) {
        byPath.set(parent, { type: 'dir', path: parent });
        implied.add(parent);
      }
    }
  }
  const paths = [...byPath.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const chunks: Buffer[] = [];
  let ino = 1;
  for (const path of paths) {
    const entry = byPath.get(path)!;
    const base = { ino: ino++, rdevMajor: 0, rdevMinor: 0 };
    switch (entry.type) {
      case 'dir':
        record(chunks, path, { ...base, mode: S_IFDIR | (entry.mode ?? 0o755), nlink: 2 }, new Uint8Array(0));
        break;
      case 'file':
        record(chunks, path, { ...base, mode: S_IFREG | (entry.mode ?? 0o644), nlink: 1 }, entry.data);
        break;
      case 'symlink':
        record(chunks, path, { ...base, mode: S_IFLNK | 0o777, nlink: 1 }, Buffer.from(entry.target, 'utf8'));
        break;
      case 'chardev':
        record(
          chunks,
          path,
          { ...base, mode: S_IFCHR | (entry.mode ?? 0o600), nlink: 1, rdevMajor: entry.major, rdevMinor: entry.minor },
          new Uint8Array(0),
        );
        break;
    }
  }
  record(chunks, TRAILER, { ino: 0, mode: 0, nlink: 1, rdevMajor: 0, rdevMinor: 0 }, new Uint8Array(0));
  return Buffer.concat(chunks);
}
