import type Database from 'better-sqlite3';
import BetterSqlite from 'better-sqlite3';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMPORT_LIMITS, type ImportLimits } from '../../electron/archive/archiveFormat.ts';
import { exportSession } from '../../electron/archive/exportSession.ts';
import { importSession } from '../../electron/archive/importSession.ts';
import { tableDigests } from '../../electron/archive/tableDigest.ts';
import { vacuumSessions } from '../../electron/archive/vacuumSessions.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { getSession, type SessionRecord } from '../../electron/store/registry.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { craftTar, manifestFor } from '../helpers/craftArchive.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();

/** The events the session events API (and so JSONL) gives a session: an exchange is two. */
function wireEvents(id: SessionId): number {
  const store = SessionEventStore.open(id, sessionPaths(home, id).dbPath);
  try {
    return store.bounds().total;
  } finally {
    store.close();
  }
}
let mainDb: Database.Database;
let seeded: SessionRecord[];
let archive: string;
beforeAll(async () => {
  seeded = await seedSessions(home, { sessions: 3, events: 200, seed: 21, crashedIndex: -1 });
  mainDb = openMainDb(home);
  archive = join(home.root, 'co-work1.capsem');
  await exportSession(home, mainDb, seeded[0]!.id, { format: 'archive', out: archive });
}, 60_000);
afterAll(() => {
  mainDb.close();
  home.remove();
});

/** Rows an import rewrites on purpose: the session's own id and name, and where it came from. */
const rewritten = (table: string, row: Record<string, unknown>): boolean =>
  table === 'session_meta' && ['session_id', 'name', 'imported_at', 'imported_from'].includes(String(row.key));

function digestsOf(dbPath: string): ReturnType<typeof tableDigests> {
  const db = new BetterSqlite(dbPath, { readonly: true });
  try {
    return tableDigests(db, rewritten);
  } finally {
    db.close();
  }
}

function meta(dbPath: string): Record<string, string> {
  const db = new BetterSqlite(dbPath, { readonly: true });
  try {
    return Object.fromEntries(
      (db.prepare('SELECT key, value FROM session_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
  } finally {
    db.close();
  }
}

/** Everything under CAPSEM_HOME but SQLite's transient -wal/-shm, with sizes. */
function listing(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (/-(wal|shm)$/.test(entry.name)) continue;
      if (entry.isDirectory()) {
        out.push(`${relative(home.root, path)}/`);
        walk(path);
      } else out.push(`${relative(home.root, path)} ${entry.name.endsWith('.db') ? '' : statSync(path).size}`);
    }
  };
  walk(home.root);
  return out.sort();
}

const sessionRows = (): unknown[] => mainDb.prepare('SELECT * FROM sessions ORDER BY id').all();

const dbBytes = (): Buffer => readFileSync(sessionPaths(home, seeded[1]!.id as SessionId).dbPath);

describe('export then import', () => {
  it('yields identical rows in every table, under a new id and a suffixed name', async () => {
    const result = await importSession(home, mainDb, archive);
    expect(result.source).toBe('archive');
    expect(result.dropped).toEqual([]);
    expect(result.id).not.toBe(seeded[0]!.id);
    expect(result.originalId).toBe(seeded[0]!.id);
    expect(result.name).toBe('co-work1-2');
    const before = digestsOf(sessionPaths(home, seeded[0]!.id as SessionId).dbPath);
    const importedDb = sessionPaths(home, result.id).dbPath;
    expect(digestsOf(importedDb)).toEqual(before);
    expect(Object.values(before).reduce((n, t) => n + t.rows, 0)).toBeGreaterThan(300);
    expect(meta(importedDb)).toMatchObject({ session_id: result.id, name: 'co-work1-2', imported_from: seeded[0]!.id });

    const record = getSession(mainDb, result.id)!;
    expect(record).toMatchObject({ status: 'stopped', mode: 'imported', resumable: false, name: 'co-work1-2' });
    expect(record.totals).toEqual(getSession(mainDb, seeded[0]!.id)!.totals);
    expect(existsSync(join(home.runDir, 'staging'))).toBe(false);
  });

  it('importing the same archive again gives another new id and the next suffix', async () => {
    const again = await importSession(home, mainDb, archive);
    expect(again.name).toBe('co-work1-3');
    expect(again.id).not.toBe(seeded[0]!.id);
    expect(getSession(mainDb, again.id)).not.toBeNull();
  });

  it('keeps the id when it is not taken', async () => {
    const other = tempHome();
    const otherDb = openMainDb(other);
    try {
      const result = await importSession(other, otherDb, archive);
      expect(result).toMatchObject({ id: seeded[0]!.id, name: 'co-work1', originalId: null, originalName: null });
    } finally {
      otherDb.close();
      other.remove();
    }
  });

  it('imports a bare session.db written by Capsem', async () => {
    const bare = join(home.root, 'bare-session.db');
    copyFileSync(sessionPaths(home, seeded[2]!.id as SessionId).dbPath, bare);
    const result = await importSession(home, mainDb, bare);
    expect(result).toMatchObject({ source: 'session.db', adopted: false, originalId: seeded[2]!.id });
    expect(digestsOf(sessionPaths(home, result.id).dbPath)).toEqual(digestsOf(bare));
  });

  it('imports a bare session.db from another tool that has only the spec tables, adding seq and event ids', async () => {
    // Another tool's file, from the spec's tables alone: no recording of ours writes one, so it is made by SQL.
    const foreign = join(home.root, 'foreign.db');
    const db = new BetterSqlite(foreign);
    db.exec(`
      CREATE TABLE net_events (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, domain TEXT NOT NULL, port INTEGER DEFAULT 443, decision TEXT NOT NULL, method TEXT, path TEXT, status_code INTEGER);
      CREATE TABLE model_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, provider TEXT NOT NULL, model TEXT, method TEXT NOT NULL, path TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER);
      CREATE TABLE tool_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, timestamp TEXT NOT NULL, model_call_id INTEGER, provider TEXT NOT NULL, status TEXT NOT NULL, call_index INTEGER NOT NULL, call_id TEXT NOT NULL, tool_name TEXT NOT NULL, decision TEXT NOT NULL);
      CREATE TABLE tool_responses (id INTEGER PRIMARY KEY AUTOINCREMENT, model_call_id INTEGER NOT NULL, call_id TEXT NOT NULL, content_preview TEXT);
      CREATE TABLE fs_events (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, action TEXT NOT NULL, path TEXT NOT NULL, size INTEGER);
      INSERT INTO net_events (timestamp, domain, decision, method, path, status_code) VALUES ('2026-03-01T10:00:00Z', 'api.anthropic.com', 'allowed', 'POST', '/v1/messages', 200);
      INSERT INTO model_calls (timestamp, provider, model, method, path, input_tokens, output_tokens) VALUES ('2026-03-01T10:00:01Z', 'anthropic', 'claude', 'POST', '/v1/messages', 10, 5);
      INSERT INTO fs_events (timestamp, action, path, size) VALUES ('2026-03-01T10:00:02Z', 'modified', 'src/a.ts', 12);
    `);
    db.close();
    const result = await importSession(home, mainDb, foreign);
    expect(result).toMatchObject({ source: 'session.db', adopted: true, name: null, dropped: [] });
    const imported = new BetterSqlite(sessionPaths(home, result.id).dbPath, { readonly: true });
    const seqs = imported
      .prepare(
        'SELECT seq, event_id FROM net_events UNION ALL SELECT seq, event_id FROM model_calls UNION ALL SELECT seq, event_id FROM fs_events ORDER BY seq',
      )
      .all() as { seq: number; event_id: string }[];
    imported.close();
    expect(seqs.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(seqs.every((r) => /^[0-9a-f]{12}$/.test(r.event_id))).toBe(true);
    expect(getSession(mainDb, result.id)!.totals).toMatchObject({ requests: 1, modelCalls: 1, fileEvents: 1, events: 3 });
  });
});

describe('a large session.db', () => {
  let large: string;
  beforeAll(() => {
    // 256 MiB: a Capsem session.db with a table of zero-filled blobs beside its rows.
    large = join(home.root, 'large-session.db');
    copyFileSync(sessionPaths(home, seeded[2]!.id as SessionId).dbPath, large);
    const db = new BetterSqlite(large);
    db.exec(
      'CREATE TABLE ballast (b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 256) INSERT INTO ballast SELECT zeroblob(1 << 20) FROM n',
    );
    db.close();
  }, 60_000);
  afterAll(() => rmSync(large, { force: true }));

  it('is checked on a thread of its own: a timer set once the check is under way fires before the import ends', async () => {
    const order: string[] = [];
    let armed = false;
    const onProgress = (stage: string): void => {
      if (stage !== 'check' || armed) return;
      armed = true;
      setTimeout(() => order.push('timer'), 0);
    };
    const result = await importSession(home, mainDb, large, { onProgress });
    order.push('import');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(order).toEqual(['timer', 'import']);
    expect(getSession(mainDb, result.id)).not.toBeNull();
  }, 60_000);

  it('is refused when its check takes longer than the limit, and nothing is written', async () => {
    const before = { files: listing(), rows: sessionRows() };
    await expect(importSession(home, mainDb, large, { limits: { maxValidationSeconds: 0.001 } })).rejects.toThrow(
      /^session.db validation took longer than 0.001 s, the import's time limit; refusing it$/,
    );
    expect({ files: listing(), rows: sessionRows() }).toEqual(before);
  }, 60_000);
});

describe('a crafted archive is refused and nothing is written', () => {
  const limits: Partial<ImportLimits> = {};
  const cases: { name: string; message: RegExp; build: () => Promise<Buffer>; limits?: () => Partial<ImportLimits> }[] = [
    {
      name: 'path traversal',
      message: /climbs out of the archive \(path traversal\)/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: '../escape.db', body: db },
        ]);
      },
    },
    {
      name: 'absolute path',
      message: /"\/tmp\/evil.db": an absolute path/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: '/tmp/evil.db', body: db },
        ]);
      },
    },
    {
      name: 'symlink',
      message: /symbolic link to "\/etc\/passwd"/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', type: 'symlink', linkname: '/etc/passwd' },
        ]);
      },
    },
    {
      name: 'hard link',
      message: /hard link to "manifest.json"/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', type: 'link', linkname: 'manifest.json' },
        ]);
      },
    },
    {
      name: 'checksum mismatch',
      message: /checksum mismatch for "session.db"/,
      build: () => {
        const db = dbBytes();
        const tampered = Buffer.from(db);
        tampered[tampered.length - 1] = tampered.at(-1)! ^ 0xff;
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', body: tampered },
        ]);
      },
    },
    {
      name: 'missing manifest',
      message: /first member is "session.db", not manifest.json/,
      build: () => craftTar([{ name: 'session.db', body: dbBytes() }]),
    },
    {
      name: 'newer format version',
      message: /format version 3, newer than this Capsem reads \(2\)/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }, { formatVersion: 3 }) },
          { name: 'session.db', body: db },
        ]);
      },
    },
    {
      name: 'member not in the manifest',
      message: /member "notes.txt" is not listed in manifest.json/,
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'notes.txt', body: Buffer.from('hi') },
          { name: 'session.db', body: db },
        ]);
      },
    },
    {
      name: 'oversized member',
      message: /member "session.db" is .* MiB, over the import limit of 0.1 MiB per member/,
      limits: () => ({ maxMemberBytes: 100_000 }),
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', body: db },
        ]);
      },
    },
    {
      name: 'oversized total',
      message: /holds .* MiB, over the import limit of/,
      limits: () => ({ maxTotalBytes: 100_000 }),
      build: () => {
        const db = dbBytes();
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', body: db },
        ]);
      },
    },
    {
      name: 'compression bomb',
      message: /compression bomb/,
      limits: () => ({ ratioAfterBytes: 1 << 20 }),
      build: async () => {
        const zeros = Buffer.alloc(48 << 20);
        return gzipSync(
          await craftTar([
            { name: 'manifest.json', body: manifestFor({ 'session.db': zeros }) },
            { name: 'session.db', body: zeros },
          ]),
          { level: 9 },
        );
      },
    },
    {
      name: 'bomb past the total limit',
      message: /inflates past the import limit/,
      // Room for what the tar declares, so only what rides after it can pass the limit.
      limits: () => ({ maxTotalBytes: dbBytes().length + (512 << 10) }),
      build: async () => {
        // Every member is as declared; the excess rides after the tar's end, where only the meter sees it.
        const db = dbBytes();
        const tarred = await craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', body: db },
        ]);
        return gzipSync(Buffer.concat([tarred, Buffer.alloc(16 << 20)]), { level: 9 });
      },
    },
    {
      name: 'not an archive',
      message: /neither a Capsem session archive nor a session.db/,
      build: () => Promise.resolve(Buffer.from('just some text, not an archive at all\n'.repeat(40))),
    },
    {
      name: 'a damaged database',
      message: /session.db (is damaged|is not a readable SQLite database)/,
      build: () => {
        const db = Buffer.from(dbBytes());
        // The first page's cells (the schema), which SQLite writes from the page's end: 1 in the header stands for 65536.
        const pageSize = db.readUInt16BE(16) === 1 ? 65536 : db.readUInt16BE(16);
        db.fill(0x55, pageSize - 12288, pageSize - 4096);
        return craftTar([
          { name: 'manifest.json', body: manifestFor({ 'session.db': db }) },
          { name: 'session.db', body: db },
        ]);
      },
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name}`, async () => {
      const file = join(home.root, '..', `${relative(join(home.root, '..'), home.root)}-${c.name.replace(/\W+/g, '-')}.capsem`);
      writeFileSync(file, await c.build());
      const before = { files: listing(), rows: sessionRows() };
      await expect(importSession(home, mainDb, file, { limits: { ...limits, ...c.limits?.() } })).rejects.toThrow(c.message);
      expect({ files: listing(), rows: sessionRows() }).toEqual(before);
    });
  }

  it('uses limits far above the benchmark session', () => {
    expect(DEFAULT_IMPORT_LIMITS.maxMemberBytes).toBeGreaterThan(1 << 30);
  });
});

describe('HAR and JSONL', () => {
  it('writes HAR 1.2 with the request and response bodies', async () => {
    const out = join(home.root, 'co-work1.har');
    const result = await exportSession(home, mainDb, seeded[0]!.id, { format: 'har', out });
    const har = JSON.parse(readFileSync(out, 'utf8')) as {
      log: { version: string; creator: { name: string; version: string }; entries: { request: { url: string } }[] };
    };
    expect(har.log.version).toBe('1.2');
    expect(har.log.creator.name).toBe('Capsem Desktop');
    expect(har.log.entries).toHaveLength(getSession(mainDb, seeded[0]!.id)!.totals.requests);
    expect(result.items).toBe(har.log.entries.length);
    const entry = har.log.entries.find((e) => e.request.url.startsWith('https://api.')) as unknown as {
      startedDateTime: string;
      time: number;
      cache: object;
      timings: { send: number; wait: number; receive: number };
      request: {
        method: string;
        url: string;
        httpVersion: string;
        headers: { name: string; value: string }[];
        queryString: unknown[];
        cookies: unknown[];
        headersSize: number;
        bodySize: number;
        postData: { mimeType: string; text: string };
      };
      response: {
        status: number;
        statusText: string;
        httpVersion: string;
        headers: unknown[];
        cookies: unknown[];
        content: { size: number; mimeType: string; text: string };
        redirectURL: string;
        headersSize: number;
        bodySize: number;
      };
    };
    expect(Number.isNaN(Date.parse(entry.startedDateTime))).toBe(false);
    expect(entry.request).toMatchObject({ method: 'POST', httpVersion: 'HTTP/1.1', cookies: [], queryString: [], headersSize: -1 });
    expect(entry.request.headers).toContainEqual({ name: 'content-type', value: 'application/json' });
    expect(JSON.parse(entry.request.postData.text)).toHaveProperty('tools');
    expect(entry.response).toMatchObject({ status: 200, statusText: 'OK', cookies: [], redirectURL: '', headersSize: -1 });
    // The seeded answer is what the provider streams (the seed records real wire formats).
    expect(entry.response.content.text).toMatch(/^(event: \w+\n)?data: \{/);
    expect(entry.response.content.size).toBe(Buffer.byteLength(entry.response.content.text));
    expect(entry.timings.send + entry.timings.wait + entry.timings.receive).toBe(entry.time);
    expect(entry.cache).toEqual({});
  });

  it('writes JSONL with one session-api event per line, in seq order', async () => {
    const out = join(home.root, 'co-work1.jsonl');
    const result = await exportSession(home, mainDb, seeded[0]!.id, { format: 'jsonl', out });
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(wireEvents(seeded[0]!.id));
    expect(result.items).toBe(lines.length);
    const events = lines.map((l) => JSON.parse(l) as { sessionId: string; seq: number; kind: string });
    expect(events.every((e) => e.sessionId === seeded[0]!.id)).toBe(true);
    expect(events.every((e, i) => i === 0 || e.seq > events[i - 1]!.seq)).toBe(true);
    expect(new Set(events.map((e) => e.kind))).toEqual(new Set(['http', 'model', 'tool_call', 'tool_result', 'file']));
  });

  it('never replaces an existing file', async () => {
    await expect(exportSession(home, mainDb, seeded[0]!.id, { format: 'jsonl', out: archive })).rejects.toThrow(/already exists/);
  });
});

describe('vacuum', () => {
  it('compacts an ended session, keeps its figures, and export still reads it back', async () => {
    const id = seeded[1]!.id as SessionId;
    const paths = sessionPaths(home, id);
    const digests = digestsOf(paths.dbPath);
    const figures = getSession(mainDb, id)!.totals;
    const events = wireEvents(id);
    const dry = await vacuumSessions(home, mainDb, { olderThanMs: 0, dryRun: true, includeResumable: true });
    expect(dry.vacuumed.map((o) => o.id)).toContain(id);
    expect(existsSync(paths.dbPath)).toBe(true);

    const kept = await vacuumSessions(home, mainDb, { olderThanMs: 0 });
    expect(kept.vacuumed.map((o) => o.id)).not.toContain(id);
    expect(kept.skippedResumable).toBeGreaterThan(0);

    const report = await vacuumSessions(home, mainDb, { olderThanMs: 0, includeResumable: true });
    const outcome = report.vacuumed.find((o) => o.id === id)!;
    expect(outcome.bytesAfter!).toBeLessThan(outcome.bytesBefore);
    expect(existsSync(paths.dbPath)).toBe(false);
    expect(existsSync(join(paths.dir, 'session.db.gz'))).toBe(true);
    const record = getSession(mainDb, id)!;
    expect(record).toMatchObject({ status: 'vacuumed', resumable: false });
    expect(record.vacuumedAt).not.toBeNull();
    expect(record.totals).toEqual(figures);

    const out = join(home.root, 'vacuumed.capsem');
    await exportSession(home, mainDb, id, { format: 'archive', out });
    const back = await importSession(home, mainDb, out);
    expect(digestsOf(sessionPaths(home, back.id).dbPath)).toEqual(digests);
    const jsonl = join(home.root, 'vacuumed.jsonl');
    await exportSession(home, mainDb, id, { format: 'jsonl', out: jsonl });
    expect(readFileSync(jsonl, 'utf8').trimEnd().split('\n')).toHaveLength(events);
  });

  it('leaves sessions younger than the age alone', async () => {
    const report = await vacuumSessions(home, mainDb, { olderThanMs: 1000 * 86_400_000, includeResumable: true });
    expect(report.vacuumed).toEqual([]);
  });
});
