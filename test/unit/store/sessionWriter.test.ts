import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestVersion, migrate, SchemaVersionError } from '../../../electron/store/migrate.ts';
import { openSessionDbForWriting, openSessionDbReadOnly, SESSION_DB_MIGRATIONS } from '../../../electron/store/sessionDb.ts';
import { SessionWriter, WriterClosedError } from '../../../electron/store/sessionWriter.ts';
import { mountSmallDisk, smallDiskUnavailable, type SmallDisk } from '../../helpers/smallDisk.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());
let n = 0;
const dbPath = (): string => `${home.root}/w${++n}.db`;
const net = (i: number) => ({ timestamp: new Date().toISOString(), domain: `h${i}.example`, decision: 'allowed' });

describe('SessionWriter', () => {
  // The 50 ms figure itself is measured in `npm run bench -- store`; here only that the batch
  // timer, not a flush or close, makes the row visible to another connection.
  it('makes a row readable by another connection without a flush', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path);
    const reader = new Database(path, { readonly: true });
    const appended = writer.append('net_events', net(1))!;
    const started = performance.now();
    let seen = 0;
    while (seen === 0 && performance.now() - started < 1000) {
      seen = (reader.prepare('SELECT count(*) AS c FROM net_events WHERE seq = ?').get(appended.seq) as { c: number }).c;
      if (seen === 0) await new Promise((r) => setTimeout(r, 2));
    }
    const elapsed = performance.now() - started;
    reader.close();
    await writer.close();
    expect(seen).toBe(1);
    expect(elapsed).toBeLessThan(1000);
  });

  it('assigns dense seqs across event tables, ids per table, and 12-hex event ids', async () => {
    const writer = await SessionWriter.open(dbPath());
    const a = writer.append('net_events', net(1))!;
    const b = writer.append('fs_events', { timestamp: new Date().toISOString(), action: 'created', path: 'a.txt', size: 3 })!;
    const c = writer.append('net_events', net(2))!;
    const blob = writer.append('event_body_blobs', {
      event_id: a.eventId!,
      source_table: 'net_events',
      direction: 'request',
      original_bytes: 1,
      stored_bytes: 1,
      created_at: 'x',
    })!;
    await writer.close();
    expect([a.seq, b.seq, c.seq]).toEqual([1, 2, 3]);
    expect([a.id, b.id, c.id]).toEqual([1, 1, 2]);
    expect(blob.seq).toBe(0);
    expect(a.eventId).toMatch(/^[0-9a-f]{12}$/);
    expect(a.eventId).not.toBe(c.eventId);
  });

  it('continues seq and ids where a reopened database left off', async () => {
    const path = dbPath();
    const first = await SessionWriter.open(path);
    first.append('net_events', net(1));
    const last = first.append('net_events', net(2))!;
    await first.close();
    const second = await SessionWriter.open(path);
    const next = second.append('fs_events', { timestamp: 't', action: 'deleted', path: 'x' })!;
    await second.close();
    expect(next.seq).toBe(3);
    // event ids ascend within a session, across reopenings, so they never collide.
    expect(next.eventId! > last.eventId!).toBe(true);
  });

  it('counts drops past the hard limit, records them, and signals backpressure before that', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(
      path,
      {},
      { highWaterBytes: 20_000, hardLimitBytes: 60_000, maxBatchDelayMs: 1000, maxBatchRows: 1_000_000 },
    );
    const big = 'x'.repeat(5_000);
    let sawDrain = false;
    let dropped = 0;
    for (let i = 0; i < 20; i++) {
      if (writer.needsDrain) sawDrain = true;
      if (writer.append('net_events', { ...net(i), request_body_preview: big }) === null) dropped += 1;
    }
    expect(sawDrain).toBe(true);
    expect(dropped).toBeGreaterThan(0);
    expect(writer.stats.dropped).toBe(dropped);
    await writer.close();
    const db = openSessionDbReadOnly(path);
    const meta = db.prepare("SELECT value FROM session_meta WHERE key = 'writer_dropped'").get() as { value: string };
    const rows = (db.prepare('SELECT count(*) AS c FROM net_events').get() as { c: number }).c;
    db.close();
    expect(Number(meta.value)).toBe(dropped);
    expect(rows).toBe(20 - dropped);
  });

  it('keeps the good rows of a batch when SQLite refuses one of them', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path);
    writer.append('fs_events', { timestamp: 't', action: 'created', path: 'good-1' });
    writer.append('fs_events', { timestamp: 't', action: 'exploded' as 'created', path: 'bad' });
    writer.append('fs_events', { timestamp: 't', action: 'modified', path: 'good-2' });
    const rejected: string[] = [];
    writer.on('commit', (info) => rejected.push(...info.rejected.map((r) => r.error)));
    await writer.close();
    expect(writer.stats.rejected).toBe(1);
    expect(rejected[0]).toMatch(/CHECK constraint/);
    const db = openSessionDbReadOnly(path);
    expect((db.prepare('SELECT path FROM fs_events ORDER BY id').all() as { path: string }[]).map((r) => r.path)).toEqual([
      'good-1',
      'good-2',
    ]);
    db.close();
  });

  it('refuses appends after close', async () => {
    const writer = await SessionWriter.open(dbPath());
    await writer.close();
    expect(() => writer.append('net_events', net(1))).toThrow(WriterClosedError);
  });

  it('leaves no WAL behind after close', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path);
    for (let i = 0; i < 100; i++) writer.append('net_events', net(i));
    await writer.close();
    const { statSync, existsSync } = await import('node:fs');
    expect(!existsSync(`${path}-wal`) || statSync(`${path}-wal`).size === 0).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe('SessionWriter past its high-water mark', () => {
  it('lets a producer waiting for room go on when the writer thread dies, rather than wait for ever', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path, {}, { highWaterBytes: 1024 });
    const errors: Error[] = [];
    writer.on('error', (err: Error) => errors.push(err));
    const row = writer.append('net_events', net(1))!;
    writer.append('event_body_blobs', {
      event_id: row.eventId,
      source_table: 'net_events',
      direction: 'response',
      original_bytes: 4096,
      stored_bytes: 4096,
      body: Buffer.alloc(4096, 0x62),
      created_at: new Date().toISOString(),
    });
    expect(writer.needsDrain).toBe(true);
    const room = writer.drained();
    // What a crash of the writer thread looks like from the producer's side.
    await (writer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await room;
    expect(writer.needsDrain).toBe(false);
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('session writer thread exited')]);
  });
});

const noSmallDisk = smallDiskUnavailable();

describe.skipIf(noSmallDisk !== null)(`SessionWriter on a disk that fills up${noSmallDisk ? ` (skipped: ${noSmallDisk})` : ''}`, () => {
  let disk: SmallDisk;
  beforeAll(() => {
    disk = mountSmallDisk(4);
  });
  afterAll(() => disk?.unmount());

  it('stops at the first commit the disk refuses, without a row-by-row retry, and accounts for every row', async () => {
    const path = `${disk.dir}/full.db`;
    const reserve = `${path}-reserve`;
    const writer = await SessionWriter.open(path);
    expect(statSync(reserve).size).toBe(512 << 10);
    const announced: string[] = [];
    writer.on('unwritable', (reason) => announced.push(reason));
    const body = Buffer.alloc(64 << 10, 0x62);
    let appends = 0;
    let netAppends = 0;
    for (let round = 0; writer.unwritable === null && round < 100; round++) {
      for (let i = 0; i < 4; i++) {
        appends += 2;
        netAppends += 1;
        const row = writer.append('net_events', net(netAppends));
        writer.append('event_body_blobs', {
          event_id: row?.eventId ?? 'aaaaaaaaaaaa',
          source_table: 'net_events',
          direction: 'request',
          original_bytes: body.length,
          stored_bytes: body.length,
          body,
          created_at: 't',
        });
      }
      await writer.flush();
    }
    expect(announced).toEqual(['cannot write session.db: database or disk is full']);
    expect(writer.unwritable).toBe(announced[0]);
    expect(writer.append('net_events', net(0))).toBeNull();
    appends += 1;
    netAppends += 1;
    expect(writer.stats.rejected).toBe(0);
    expect(writer.stats.committed + writer.stats.lost).toBe(appends);
    // Half the reserve is given back at once (for the marker), the rest once session.db is closed (for main.db).
    expect(statSync(reserve).size).toBe(256 << 10);
    await writer.close();
    expect(existsSync(reserve)).toBe(false);
    const db = openSessionDbReadOnly(path);
    const meta = Object.fromEntries(
      (db.prepare('SELECT key, value FROM session_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
    const recorded = (db.prepare('SELECT count(*) AS n FROM net_events').get() as { n: number }).n;
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    expect(meta).toMatchObject({
      writer_unwritable: announced[0],
      writer_lost: String(writer.stats.lost),
      writer_lost_net_events: String(writer.stats.lostByTable.net_events),
    });
    expect(recorded + writer.stats.lostByTable.net_events!).toBe(netAppends);
  });
});

describe('schema versions', () => {
  const LATEST = latestVersion(SESSION_DB_MIGRATIONS);

  it('refuses a session.db written by a newer version with a clear error', () => {
    const path = dbPath();
    openSessionDbForWriting(path).close();
    const raw = new Database(path);
    raw.pragma('user_version = 99');
    raw.close();
    expect(() => openSessionDbForWriting(path)).toThrow(SchemaVersionError);
    expect(() => openSessionDbReadOnly(path)).toThrow(`schema version 99, newer than this Capsem supports (${LATEST})`);
  });

  it('brings a version 1 database (made before VM sessions, WebSocket frames and DNS lookups) up to date', () => {
    const path = dbPath();
    const v1 = new Database(path);
    migrate(v1, 'test', SESSION_DB_MIGRATIONS.slice(0, 1));
    v1.exec('DROP TABLE exec_events');
    v1.exec('DROP TABLE ws_frames');
    v1.exec('DROP TABLE dns_events');
    v1.exec('ALTER TABLE net_events DROP COLUMN parse_error');
    v1.close();
    const db = openSessionDbForWriting(path);
    const columns = (table: string): string[] => (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST);
    expect(columns('exec_events')).toContain('exit_code');
    expect(columns('ws_frames')).toContain('net_event_id');
    expect(columns('net_events')).toContain('parse_error');
    expect(columns('dns_events')).toEqual(
      expect.arrayContaining(['seq', 'event_id', 'name', 'type', 'rcode', 'answers', 'resolved', 'decision', 'process_name']),
    );
    db.close();
  });

  it('applies forward migrations in order, once', () => {
    const path = dbPath();
    openSessionDbForWriting(path).close();
    const db = new Database(path);
    const extra = [
      ...SESSION_DB_MIGRATIONS,
      { version: LATEST + 1, up: (d: Database.Database) => d.exec('ALTER TABLE net_events ADD COLUMN dial_addr TEXT') },
    ];
    migrate(db, 'test', extra);
    migrate(db, 'test', extra);
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST + 1);
    expect((db.prepare('PRAGMA table_info(net_events)').all() as { name: string }[]).some((c) => c.name === 'dial_addr')).toBe(true);
    db.close();
  });
});

describe('column defaults', () => {
  it('stores a handed-over body intact, moving its memory rather than copying it; a slice is copied and its parent kept', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path);
    const a = writer.append('net_events', net(1))!;
    const big = Buffer.alloc(1 << 20);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const expected = Buffer.from(big);
    const small = Buffer.from('pooled body');
    const parent = Buffer.alloc(1 << 20, 7);
    const slice = parent.subarray(100, 100 + (40 << 10));
    const blob = (body: Buffer, direction: 'request' | 'response', eventId = a.eventId!) => ({
      event_id: eventId,
      source_table: 'net_events' as const,
      direction,
      original_bytes: body.length,
      stored_bytes: body.length,
      body,
      created_at: 'x',
    });
    writer.append('event_body_blobs', blob(big, 'response'), { handOver: true });
    writer.append('event_body_blobs', blob(small, 'request'), { handOver: true });
    writer.append('event_body_blobs', blob(slice, 'response', writer.append('net_events', net(2))!.eventId!), { handOver: true });
    await writer.close();
    expect(big.length).toBe(0);
    expect(small.toString()).toBe('pooled body');
    expect(parent.length).toBe(1 << 20);
    const db = openSessionDbReadOnly(path);
    const rows = db.prepare('SELECT direction, body FROM event_body_blobs ORDER BY id').all() as { direction: string; body: Buffer }[];
    db.close();
    expect(rows.map((r) => r.direction)).toEqual(['response', 'request', 'response']);
    expect(Buffer.compare(rows[0]!.body, expected)).toBe(0);
    expect(rows[1]!.body.toString()).toBe('pooled body');
    expect(Buffer.compare(rows[2]!.body, Buffer.alloc(40 << 10, 7))).toBe(0);
  });

  it('fills a column the producer leaves out with its DEFAULT, not NULL', async () => {
    const path = dbPath();
    const writer = await SessionWriter.open(path);
    writer.append('net_events', net(1));
    writer.append('tool_calls', {
      timestamp: 't',
      provider: 'anthropic',
      status: 'requested',
      call_index: 0,
      call_id: 'c',
      tool_name: 'Bash',
      decision: 'allowed',
    });
    const a = writer.append('net_events', net(2))!;
    writer.append('event_body_blobs', {
      event_id: a.eventId!,
      source_table: 'net_events',
      direction: 'request',
      original_bytes: 1,
      stored_bytes: 1,
      created_at: 't',
    });
    await writer.close();
    expect(writer.stats.rejected).toBe(0);
    const db = openSessionDbReadOnly(path);
    expect(db.prepare('SELECT port, bytes_sent, conn_type FROM net_events WHERE id = 1').get()).toEqual({
      port: 443,
      bytes_sent: 0,
      conn_type: 'https',
    });
    expect(db.prepare('SELECT origin, duration_ms FROM tool_calls').get()).toEqual({ origin: 'native', duration_ms: 0 });
    expect(db.prepare('SELECT truncated FROM event_body_blobs').get()).toEqual({ truncated: 0 });
    db.close();
  });
});
