import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { migrate, type Migration } from '../store/migrate.ts';
import { ensurePrivateDir, makePrivateFiles, type CapsemHome } from '../store/paths.ts';

// The workspace's file contents, content-addressed: a baseline's files and every later version
// of a changed file, each kept once however many sessions or versions hold it. One SQLite file per
// CAPSEM_HOME (store/content.db) rather than a file per object: a 20,000-file baseline is one
// transaction, not 20,000 creates, and an export copies what a session names in one query.

/** The sha256 of a content, in hex: how fs_events and workspace_files name a version of a file. */
export type ContentHash = string;

/** Contents above this are named by hash only: a diff of them means nothing to a person, and they would swamp the store. */
export const KEPT_CONTENT_MAX = 2 << 20;

export function contentHash(bytes: Uint8Array): ContentHash {
  return createHash('sha256').update(bytes).digest('hex');
}

const HASH = /^[0-9a-f]{64}$/;
export const isContentHash = (value: unknown): value is ContentHash => typeof value === 'string' && HASH.test(value);

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    up: (db) => {
      // encoding: 'deflate' when compressing saved space, 'raw' when it did not (already compressed data).
      db.exec(`CREATE TABLE objects (
        hash TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        encoding TEXT NOT NULL CHECK (encoding IN ('raw','deflate')),
        data BLOB NOT NULL
      ) WITHOUT ROWID`);
    },
  },
];

/** A stored content as it sits in the store, for copying between stores (export, import) without recompressing. */
export interface StoredObject {
  readonly hash: ContentHash;
  readonly size: number;
  readonly encoding: 'raw' | 'deflate';
  readonly data: Uint8Array;
}

const deflateRawAsync = promisify(deflateRaw);
/** Contents from this size on are compressed on another thread. */
const COMPRESS_APART_FROM = 256 << 10;

export function contentStorePath(home: CapsemHome): string {
  return join(home.root, 'store', 'content.db');
}

export class ContentStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly exists: Database.Statement;

  private constructor(private readonly db: Database.Database) {
    this.insert = db.prepare('INSERT OR IGNORE INTO objects (hash, size, encoding, data) VALUES (?, ?, ?, ?)');
    this.select = db.prepare('SELECT hash, size, encoding, data FROM objects WHERE hash = ?');
    this.exists = db.prepare('SELECT 1 FROM objects WHERE hash = ?').pluck();
  }

  static open(home: CapsemHome): ContentStore {
    ensurePrivateDir(join(home.root, 'store'));
    return ContentStore.openFile(contentStorePath(home));
  }

  /** A store in a file of its own (an archive's copy). */
  static openFile(path: string): ContentStore {
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 5000');
      migrate(db, `content store ${path}`, MIGRATIONS);
      makePrivateFiles(path);
      return new ContentStore(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Keeps `bytes` (once, whatever calls it) and returns its hash. */
  put(bytes: Uint8Array, hash: ContentHash = contentHash(bytes)): ContentHash {
    if (this.exists.get(hash) !== undefined) return hash;
    this.keep(hash, bytes, deflateRawSync(bytes, { level: 6 }));
    return hash;
  }

  /**
   * As `put`, compressing on libuv's threads: 2 MiB that do not compress take a tenth of a second
   * to try, which a batch of large changes would otherwise spend holding the main thread.
   */
  async putAsync(bytes: Uint8Array, hash: ContentHash = contentHash(bytes)): Promise<ContentHash> {
    if (this.exists.get(hash) !== undefined) return hash;
    this.keep(hash, bytes, await deflateRawAsync(bytes, { level: 6 }));
    return hash;
  }

  /**
   * Keeps many contents in one transaction. Large ones are compressed on libuv's threads side by
   * side; small ones here, where a thread's round trip (a zlib handle each) costs more than it saves.
   */
  async putMany(contents: readonly { readonly bytes: Uint8Array; readonly hash: ContentHash }[]): Promise<void> {
    const fresh = new Map<ContentHash, Uint8Array>();
    for (const { bytes, hash } of contents) if (!fresh.has(hash) && this.exists.get(hash) === undefined) fresh.set(hash, bytes);
    const packed = await Promise.all(
      [...fresh].map(([, bytes]) => (bytes.length < COMPRESS_APART_FROM ? deflateRawSync(bytes, { level: 6 }) : deflateRawAsync(bytes, { level: 6 }))),
    );
    this.batch(() => [...fresh].forEach(([hash, bytes], i) => this.keep(hash, bytes, packed[i]!)));
  }

  private keep(hash: ContentHash, bytes: Uint8Array, packed: Buffer): void {
    if (packed.length < bytes.length) this.insert.run(hash, bytes.length, 'deflate', packed);
    else this.insert.run(hash, bytes.length, 'raw', Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  /** Runs `work` in one transaction: many puts cost one commit. */
  batch<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  has(hash: ContentHash): boolean {
    return this.exists.get(hash) !== undefined;
  }

  /** The content of `hash`, or null when the store does not keep it. */
  get(hash: ContentHash): Buffer | null {
    const row = this.object(hash);
    if (!row) return null;
    const data = Buffer.from(row.data);
    return row.encoding === 'deflate' ? inflateRawSync(data) : data;
  }

  object(hash: ContentHash): StoredObject | null {
    return (this.select.get(hash) as StoredObject | undefined) ?? null;
  }

  /** Adds an object read from another store, checking that its content is what its hash says. */
  adopt(object: StoredObject): void {
    if (!isContentHash(object.hash) || (object.encoding !== 'raw' && object.encoding !== 'deflate'))
      throw new Error(`a stored content is malformed (hash ${String(object.hash).slice(0, 80)})`);
    if (this.has(object.hash)) return;
    const data = Buffer.from(object.data);
    const content = object.encoding === 'deflate' ? inflateRawSync(data, { maxOutputLength: KEPT_CONTENT_MAX }) : data;
    if (content.length !== object.size || contentHash(content) !== object.hash)
      throw new Error(`a stored content does not match its hash ${object.hash}`);
    this.insert.run(object.hash, object.size, object.encoding, data);
  }

  /** Bytes the store's objects take, compressed, and their contents' size. */
  totals(): { objects: number; storedBytes: number; contentBytes: number } {
    const row = this.db.prepare('SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(data)), 0) AS stored, COALESCE(SUM(size), 0) AS content FROM objects').get() as {
      n: number;
      stored: number;
      content: number;
    };
    return { objects: row.n, storedBytes: row.stored, contentBytes: row.content };
  }

  close(): void {
    this.db.close();
  }
}
