import type Database from 'better-sqlite3';
import { closeSync, existsSync, openSync, readSync, writeSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import {
  contentHash,
  ContentStore,
  contentStorePath,
  isContentHash,
  KEPT_CONTENT_MAX,
  type StoredObject,
} from '../changes/contentStore.ts';
import type { CapsemHome } from '../store/paths.ts';
import { openImportedDb } from './importedSchema.ts';
import { existingTables } from '../store/rollup.ts';
import { columnsOf } from '../store/tableColumns.ts';
import { ArchiveRejectedError } from './archiveFormat.ts';

// contents.pack, the archive member that carries the workspace contents a session names (its
// baseline's and each change's before and after) out of the home's content store. A flat run of
// records rather than a SQLite file: an import then reads bytes it checks one field at a time,
// never a hostile database's schema. Objects travel as the store keeps them (deflated or raw), so
// neither side recompresses.
//
//   "CSMCNT01"  then per object:  hash (32 bytes) | encoding (1: 0 raw, 1 deflate)
//                                 | size (uint32 BE, the content's) | length (uint32 BE) | data

export const CONTENTS_MEMBER = 'contents.pack';
const MAGIC = Buffer.from('CSMCNT01', 'latin1');
const HEADER = 32 + 1 + 4 + 4;
const ENCODINGS = ['raw', 'deflate'] as const;
const SLICE_MS = 20;

/** Every content hash `db` (a session.db) names, whatever its schema version. */
export function namedContents(db: Database.Database): Set<string> {
  const tables = existingTables(db);
  const sources: string[] = [];
  if (tables.has('workspace_files') && columnsOf(db, 'workspace_files').has('hash')) sources.push('SELECT hash AS h FROM workspace_files');
  if (tables.has('fs_events')) {
    const columns = columnsOf(db, 'fs_events');
    for (const column of ['before_hash', 'after_hash']) if (columns.has(column)) sources.push(`SELECT ${column} AS h FROM fs_events`);
  }
  const named = new Set<string>();
  if (sources.length === 0) return named;
  for (const h of db
    .prepare(`SELECT DISTINCT h FROM (${sources.join(' UNION ALL ')}) WHERE h IS NOT NULL`)
    .pluck()
    .iterate())
    if (isContentHash(h)) named.add(h);
  return named;
}

/**
 * Writes the objects of `named` that the home's store keeps to `outPath`; returns how many, or
 * null (and writes nothing) when it keeps none of them.
 */
export async function writeContentsPack(
  home: CapsemHome,
  named: ReadonlySet<string>,
  outPath: string,
  onProgress?: (done: number, total: number) => void,
): Promise<{ objects: number; bytes: number } | null> {
  if (named.size === 0 || !existsSync(contentStorePath(home))) return null;
  const store = ContentStore.open(home);
  let fd: number | null = null;
  let objects = 0;
  let bytes = 0;
  let sliceEnd = performance.now() + SLICE_MS;
  try {
    for (const [done, hash] of [...named].sort().entries()) {
      // Gigabytes of contents are written a slice at a time: the thread also serves the window and live sessions.
      if (performance.now() >= sliceEnd) {
        onProgress?.(done, named.size);
        await new Promise((resolve) => setImmediate(resolve));
        sliceEnd = performance.now() + SLICE_MS;
      }
      const object = store.object(hash);
      if (!object) continue;
      if (fd === null) {
        fd = openSync(outPath, 'wx', 0o600);
        bytes += writeSync(fd, MAGIC);
      }
      const head = Buffer.alloc(HEADER);
      head.write(hash, 0, 'hex');
      head.writeUInt8(ENCODINGS.indexOf(object.encoding), 32);
      head.writeUInt32BE(object.size, 33);
      head.writeUInt32BE(object.data.length, 37);
      bytes += writeSync(fd, head);
      bytes += writeSync(fd, object.data);
      objects++;
    }
  } finally {
    if (fd !== null) closeSync(fd);
    store.close();
  }
  return fd === null ? null : { objects, bytes };
}

const refuse = (why: string): never => {
  throw new ArchiveRejectedError(`${CONTENTS_MEMBER} is refused: ${why}`);
};

/** Reads exactly `length` bytes at `position`, or refuses a pack cut short. */
function readExactly(fd: number, length: number, position: number): Buffer {
  const buffer = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buffer, got, length - got, position + got);
    if (n === 0) refuse(`it ends inside an object, at byte ${position + got}`);
    got += n;
  }
  return buffer;
}

/** Inflates `object` no further than its stated size and checks it is the content its hash names. */
function checkObject(object: StoredObject): void {
  let content: Buffer;
  try {
    content =
      object.encoding === 'deflate' ? inflateRawSync(object.data, { maxOutputLength: Math.max(1, object.size) }) : Buffer.from(object.data);
  } catch (err) {
    return refuse(`the content ${object.hash} does not inflate to its stated ${object.size} bytes (${(err as Error).message})`);
  }
  if (content.length !== object.size) refuse(`the content ${object.hash} is ${content.length} bytes, not the ${object.size} it states`);
  if (contentHash(content) !== object.hash) refuse(`the content stated as ${object.hash} hashes to ${contentHash(content)}`);
}

/**
 * Reads and checks every object of the pack at `path` before handing any to `onObject`: each is
 * one the session names, appears once, is at most the store's cap, and is the content its hash
 * names. A pack that fails anywhere is refused before a single object is handed on.
 */
export function readContentsPack(path: string, named: ReadonlySet<string>, onObject: (object: StoredObject) => void): number {
  const fd = openSync(path, 'r');
  try {
    const each = (visit: (object: StoredObject) => void): number => {
      if (!readExactly(fd, MAGIC.length, 0).equals(MAGIC)) refuse('it does not start as a Capsem contents pack');
      let position = MAGIC.length;
      let count = 0;
      for (;;) {
        const probe = Buffer.alloc(1);
        if (readSync(fd, probe, 0, 1, position) === 0) return count;
        const head = readExactly(fd, HEADER, position);
        const hash = head.toString('hex', 0, 32);
        const encoding = ENCODINGS[head.readUInt8(32)] ?? refuse(`the content ${hash} has an unknown encoding ${head.readUInt8(32)}`);
        const size = head.readUInt32BE(33);
        const length = head.readUInt32BE(37);
        if (size > KEPT_CONTENT_MAX) refuse(`the content ${hash} states ${size} bytes, over the ${KEPT_CONTENT_MAX} a store keeps`);
        if (encoding === 'raw' ? length !== size : length > KEPT_CONTENT_MAX)
          refuse(`the content ${hash} holds ${length} bytes of ${encoding} data for ${size} bytes of content`);
        visit({ hash, encoding, size, data: readExactly(fd, length, position + HEADER) });
        position += HEADER + length;
        count++;
      }
    };
    const seen = new Set<string>();
    each((object) => {
      if (!named.has(object.hash)) refuse(`it holds the content ${object.hash}, which the session does not name`);
      if (seen.has(object.hash)) refuse(`it holds the content ${object.hash} twice`);
      seen.add(object.hash);
      checkObject(object);
    });
    return each(onObject);
  } finally {
    closeSync(fd);
  }
}

/** Objects adopted per transaction: a live session recording into the same store waits at most for one batch. */
const ADOPT_BATCH = 256;

/**
 * Adds the pack's contents to the home's store once every one is checked (readContentsPack). The
 * store is content-addressed, so what it holds already is kept once; should the machine fail part
 * way (a full disk), what was added is valid content, and the import is refused.
 */
export function adoptContentsPack(home: CapsemHome, named: ReadonlySet<string>, packPath: string): number {
  const store = ContentStore.open(home);
  try {
    let pending: StoredObject[] = [];
    const flush = (): void => {
      const batch = pending;
      pending = [];
      store.batch(() => {
        for (const object of batch) store.adopt(object);
      });
    };
    const count = readContentsPack(packPath, named, (object) => {
      pending.push(object);
      if (pending.length >= ADOPT_BATCH) flush();
    });
    flush();
    return count;
  } finally {
    store.close();
  }
}

/** Adopts the pack at `pack` for the staged session.db at `dbPath` (checked and stripped of its schema code by then). */
export function adoptStagedContents(dbPath: string, home: CapsemHome, pack: string): number {
  const db = openImportedDb(dbPath);
  let named: Set<string>;
  try {
    named = namedContents(db);
  } finally {
    db.close();
  }
  return adoptContentsPack(home, named, pack);
}
