import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { migrate, type Migration } from '../store/migrate.ts';
import { ensurePrivateDir, makePrivateFiles, type CapsemHome } from '../store/paths.ts';
import { CHUNKED_FROM, chunkEnds } from './contentChunks.ts';

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
      // encoding: 'deflate' when compressing saved space, 'raw' when it did not (already compressed
      // data), 'chunks' for a large content kept as its chunks (contentChunks.ts): data is then the
      // chunks' sha256 hashes, 32 bytes each, in order.
      db.exec(`CREATE TABLE objects (
        hash TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        encoding TEXT NOT NULL CHECK (encoding IN ('raw','deflate','chunks')),
        data BLOB NOT NULL
      ) WITHOUT ROWID`);
      db.exec(`CREATE TABLE chunks (
        hash BLOB PRIMARY KEY,
        size INTEGER NOT NULL,
        encoding TEXT NOT NULL CHECK (encoding IN ('raw','deflate')),
        data BLOB NOT NULL
      ) WITHOUT ROWID`);
    },
  },
];

/** A content as one store hands it to another (export, import): whole, deflated or raw. */
export interface StoredObject {
  readonly hash: ContentHash;
  readonly size: number;
  readonly encoding: 'raw' | 'deflate';
  readonly data: Uint8Array;
}

const deflateRawAsync = promisify(deflateRaw);
const DEFLATE = { level: 6 } as const;
/** Whole contents from this size on are compressed on another thread by putAsync. */
const COMPRESS_APART_FROM = 256 << 10;

/**
 * Whether a content is kept as chunks: a large text. A binary (a NUL in its first 8,000 bytes, as
 * git tells) is rarely edited a line at a time, and compressed data shares no chunks between versions.
 */
const chunks = (bytes: Uint8Array): boolean => bytes.length >= CHUNKED_FROM && !bytes.subarray(0, 8000).includes(0);

/** A piece to keep: a whole content, or a chunk of a large one, with its compressed form once made. */
interface Piece {
  readonly bytes: Uint8Array;
  packed: Buffer | null;
}

/** What a large content is kept as: its chunks' hashes in order, and the chunks the store lacks. */
interface Chunked {
  readonly refs: Buffer;
  readonly fresh: Map<string, Piece>;
}

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const chunkKey = (hash: Buffer): string => hash.toString('hex');

export function contentStorePath(home: CapsemHome): string {
  return join(home.root, 'store', 'content.db');
}

export class ContentStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly exists: Database.Statement;
  private readonly insertChunk: Database.Statement;
  private readonly selectChunk: Database.Statement;
  private readonly chunkExists: Database.Statement;

  private constructor(private readonly db: Database.Database) {
    this.insert = db.prepare('INSERT OR IGNORE INTO objects (hash, size, encoding, data) VALUES (?, ?, ?, ?)');
    this.select = db.prepare('SELECT hash, size, encoding, data FROM objects WHERE hash = ?');
    this.exists = db.prepare('SELECT 1 FROM objects WHERE hash = ?').pluck();
    this.insertChunk = db.prepare('INSERT OR IGNORE INTO chunks (hash, size, encoding, data) VALUES (?, ?, ?, ?)');
    this.selectChunk = db.prepare('SELECT size, encoding, data FROM chunks WHERE hash = ?');
    this.chunkExists = db.prepare('SELECT 1 FROM chunks WHERE hash = ?').pluck();
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
    if (this.has(hash)) return hash;
    if (!chunks(bytes)) {
      this.keepWhole(hash, { bytes, packed: deflateRawSync(bytes, DEFLATE) });
      return hash;
    }
    const chunked = this.chunked(bytes);
    for (const piece of chunked.fresh.values()) piece.packed = deflateRawSync(piece.bytes, DEFLATE);
    this.batch(() => this.keepChunked(hash, bytes.length, chunked));
    return hash;
  }

  /**
   * As `put`, a large content compressed on libuv's threads: 2 MiB that do not compress take a
   * tenth of a second to try, which a burst of large changes would otherwise spend holding the
   * main thread.
   */
  async putAsync(bytes: Uint8Array, hash: ContentHash = contentHash(bytes)): Promise<ContentHash> {
    if (this.has(hash) || bytes.length < COMPRESS_APART_FROM) return this.put(bytes, hash);
    if (!chunks(bytes)) {
      this.keepWhole(hash, { bytes, packed: await deflateRawAsync(bytes, DEFLATE) });
      return hash;
    }
    const chunked = this.chunked(bytes);
    await Promise.all(
      [...chunked.fresh.values()].map(async (piece) => {
        piece.packed = await deflateRawAsync(piece.bytes, DEFLATE);
      }),
    );
    this.batch(() => this.keepChunked(hash, bytes.length, chunked));
    return hash;
  }

  /**
   * Keeps many contents in one transaction, compressing here: a baseline's thousands of small
   * contents and chunks each cost less than a thread's round trip (a zlib handle each) would.
   */
  putMany(contents: readonly { readonly bytes: Uint8Array; readonly hash: ContentHash }[]): void {
    this.batch(() => {
      for (const { bytes, hash } of contents) this.put(bytes, hash);
    });
  }

  /** Cuts a large content into chunks: their hashes, and those the store does not have yet. */
  private chunked(bytes: Uint8Array): Chunked {
    const ends = chunkEnds(bytes);
    const refs = Buffer.alloc(ends.length * 32);
    const fresh = new Map<string, Piece>();
    let start = 0;
    ends.forEach((end, i) => {
      const chunk = bytes.subarray(start, end);
      const hash = createHash('sha256').update(chunk).digest();
      hash.copy(refs, i * 32);
      const key = chunkKey(hash);
      if (!fresh.has(key) && this.chunkExists.get(hash) === undefined) fresh.set(key, { bytes: chunk, packed: null });
      start = end;
    });
    return { refs, fresh };
  }

  private keepWhole(hash: ContentHash, piece: Piece): void {
    const { bytes, packed } = piece;
    if (packed && packed.length < bytes.length) this.insert.run(hash, bytes.length, 'deflate', packed);
    else this.insert.run(hash, bytes.length, 'raw', asBuffer(bytes));
  }

  private keepChunked(hash: ContentHash, size: number, { refs, fresh }: Chunked): void {
    for (const [key, { bytes, packed }] of fresh) {
      const id = Buffer.from(key, 'hex');
      if (packed && packed.length < bytes.length) this.insertChunk.run(id, bytes.length, 'deflate', packed);
      else this.insertChunk.run(id, bytes.length, 'raw', asBuffer(bytes));
    }
    this.insert.run(hash, size, 'chunks', refs);
  }

  /** Runs `work` in one transaction: many puts cost one commit. */
  batch<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  has(hash: ContentHash): boolean {
    return this.exists.get(hash) !== undefined;
  }

  /** The content of `hash`, or null when the store does not keep it (or has lost a chunk of it). */
  get(hash: ContentHash): Buffer | null {
    const row = this.select.get(hash) as { size: number; encoding: 'raw' | 'deflate' | 'chunks'; data: Buffer } | undefined;
    if (!row) return null;
    if (row.encoding !== 'chunks') return unpack(row.encoding, row.data);
    const parts: Buffer[] = [];
    for (let at = 0; at < row.data.length; at += 32) {
      const chunk = this.selectChunk.get(row.data.subarray(at, at + 32)) as { encoding: 'raw' | 'deflate'; data: Buffer } | undefined;
      if (!chunk) return null;
      parts.push(unpack(chunk.encoding, chunk.data));
    }
    return Buffer.concat(parts, row.size);
  }

  /** `hash` as another store takes it: a chunked content whole again, deflated. */
  object(hash: ContentHash): StoredObject | null {
    const row = this.select.get(hash) as { hash: string; size: number; encoding: 'raw' | 'deflate' | 'chunks'; data: Buffer } | undefined;
    if (!row) return null;
    if (row.encoding !== 'chunks') return { hash: row.hash, size: row.size, encoding: row.encoding, data: row.data };
    const content = this.get(hash);
    return content && { hash, size: content.length, encoding: 'deflate', data: deflateRawSync(content, DEFLATE) };
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
    if (chunks(content)) this.put(content, object.hash);
    else this.insert.run(object.hash, object.size, object.encoding, data);
  }

  /** Contents kept, the bytes they take in the store (chunks counted once) and their own size. */
  totals(): { objects: number; storedBytes: number; contentBytes: number } {
    const row = this.db
      .prepare(
        `SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(data)), 0) + (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM chunks) AS stored,
         COALESCE(SUM(size), 0) AS content FROM objects`,
      )
      .get() as { n: number; stored: number; content: number };
    return { objects: row.n, storedBytes: row.stored, contentBytes: row.content };
  }

  close(): void {
    this.db.close();
  }
}

const unpack = (encoding: 'raw' | 'deflate', data: Buffer): Buffer => (encoding === 'deflate' ? inflateRawSync(data) : Buffer.from(data));
