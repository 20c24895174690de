import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { capsemVersion } from '../platform/capsemVersion.ts';
import { ARCHIVE_FORMAT, ARCHIVE_FORMAT_VERSION, MANIFEST_NAME, type Manifest, type ManifestMember } from './archiveFormat.ts';
import type { SessionSnapshot, SnapshotFile } from './sessionSnapshot.ts';
import { tableCounts } from './tableDigest.ts';

// Writes a session snapshot as an archive: manifest.json first, then session.db, the logs and the
// workspace contents.
// Every member is hashed before the tar is written (one extra read, from the page cache) so the
// manifest can lead: an import then knows every name, size and checksum before it stores a byte.

export interface ArchiveIdentity {
  readonly id: string;
  readonly name: string | null;
  readonly status: string | null;
  readonly createdAt: string | null;
  readonly stoppedAt: string | null;
}

export interface ArchiveWriteOptions {
  /**
   * gzip at level 1. Off by default: the benchmark's 250 MB session took longer to deflate than
   * the 5 s export budget allows on two cores, and bodies are often compressed already.
   */
  readonly gzip?: boolean;
  readonly onProgress?: (stage: string, done: number, total: number) => void;
  readonly now?: Date;
}

function readPrefix(file: SnapshotFile): ReadStream {
  // `end` is inclusive; an empty file is read as an empty range.
  return createReadStream(file.path, { start: 0, end: Math.max(0, file.bytes - 1), highWaterMark: 1 << 20 });
}

async function sha256Of(file: SnapshotFile, onBytes: (n: number) => void): Promise<string> {
  const hash = createHash('sha256');
  if (file.bytes > 0) {
    for await (const chunk of readPrefix(file) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      onBytes(chunk.length);
    }
  }
  return hash.digest('hex');
}

function counts(dbPath: string): Record<string, number> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return tableCounts(db);
  } finally {
    db.close();
  }
}

export async function buildManifest(
  snapshot: SessionSnapshot,
  identity: ArchiveIdentity,
  options: ArchiveWriteOptions = {},
): Promise<Manifest> {
  const files: (SnapshotFile & { name: ManifestMember['path'] })[] = [{ ...snapshot.db, name: 'session.db' }, ...snapshot.logs];
  if (snapshot.contents) files.push({ ...snapshot.contents, name: 'contents.pack' });
  const total = files.reduce((sum, f) => sum + f.bytes, 0);
  let done = 0;
  const members: ManifestMember[] = [];
  for (const file of files) {
    const sha256 = await sha256Of(file, (n) => options.onProgress?.('checksums', (done += n), total));
    members.push({ path: file.name, bytes: file.bytes, sha256 });
  }
  return {
    format: ARCHIVE_FORMAT,
    formatVersion: ARCHIVE_FORMAT_VERSION,
    sessionId: identity.id,
    name: identity.name,
    status: identity.status,
    createdAt: identity.createdAt,
    stoppedAt: identity.stoppedAt,
    exportedAt: (options.now ?? new Date()).toISOString(),
    appVersion: capsemVersion(),
    counts: counts(snapshot.db.path),
    members,
  };
}

async function addEntry(
  pack: tar.Pack,
  name: string,
  size: number,
  mtime: Date,
  body: AsyncIterable<Buffer> | Buffer,
  onBytes?: (n: number) => void,
): Promise<void> {
  const finished = new Promise<void>((resolve, reject) => {
    const entry = pack.entry({ name, size, mode: 0o600, mtime, type: 'file' }, (err) => (err ? reject(err) : resolve()));
    void (async () => {
      try {
        if (Buffer.isBuffer(body)) entry.write(body);
        else {
          for await (const chunk of body) {
            onBytes?.(chunk.length);
            if (!entry.write(chunk)) await once(entry, 'drain');
          }
        }
        entry.end(undefined);
      } catch (err) {
        entry.destroy(err as Error);
        reject(err as Error);
      }
    })();
  });
  await finished;
}

/** Streams the archive to `outPath`; returns the bytes written. */
export async function writeArchive(
  snapshot: SessionSnapshot,
  manifest: Manifest,
  outPath: string,
  options: ArchiveWriteOptions = {},
): Promise<number> {
  const pack = tar.pack();
  const out = createWriteStream(outPath, { flags: 'wx', mode: 0o600 });
  const stages = options.gzip ? [pack, createGzip({ level: 1 }), out] : [pack, out];
  const written = pipeline(stages as unknown as [NodeJS.ReadableStream, NodeJS.WritableStream]);
  const mtime = options.now ?? new Date();
  const files = new Map<string, SnapshotFile>([['session.db', snapshot.db], ...snapshot.logs.map((l) => [l.name, l] as const)]);
  if (snapshot.contents) files.set('contents.pack', snapshot.contents);
  const total = manifest.members.reduce((sum, m) => sum + m.bytes, 0);
  let done = 0;
  try {
    const json = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    await addEntry(pack, MANIFEST_NAME, json.length, mtime, json);
    for (const member of manifest.members) {
      const file = files.get(member.path)!;
      const body = member.bytes > 0 ? (readPrefix(file) as AsyncIterable<Buffer>) : Buffer.alloc(0);
      await addEntry(pack, member.path, member.bytes, mtime, body, (n) => options.onProgress?.('archive', (done += n), total));
    }
    pack.finalize();
    await written;
  } catch (err) {
    pack.destroy(err as Error);
    await written.catch(() => undefined);
    throw err;
  }
  return out.bytesWritten;
}
