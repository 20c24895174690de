import BetterSqlite from 'better-sqlite3';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import tar from 'tar-stream';
import { ContentStore, contentHash, contentStorePath } from '../../electron/changes/contentStore.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { craftArchive } from '../helpers/craftArchive.ts';
import { runCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// An archive carries the workspace contents its session names (the baseline's and each change's),
// and an import adds them to the importing home's store, checked: `capsem export` and `capsem
// import` run as a user runs them, from a folder outside the checkout.

const source = tempHome();
let ids: string[] = [];

// The workspace as a session saw it: text, an empty file, a binary, a large one that compresses,
// and a version of a file the changes wrote. `huge` stands for a file named by hash only.
const text = (s: string): Buffer => Buffer.from(s, 'utf8');
const contents = {
  readme: text('# demo\n\nA project the agent was lent.\n'),
  app: text('export const answer = 42;\n'.repeat(200)),
  appEdited: text('export const answer = 43;\n'.repeat(200)),
  empty: Buffer.alloc(0),
  binary: Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24)),
  large: text('line of a generated file that compresses well\n'.repeat(40_000)),
};
const hugeHash = contentHash(text('a file over the store cap, named by hash only'));
const hashes = Object.fromEntries(Object.entries(contents).map(([k, v]) => [k, contentHash(v)])) as Record<keyof typeof contents, string>;

/** Gives session `id` of `home` a baseline and changes naming `baseline` and the app's edit, and puts them in the home's store. */
function recordWorkspace(home: ReturnType<typeof tempHome>, id: string, baseline: (keyof typeof contents)[]): void {
  const store = ContentStore.open(home);
  store.batch(() => {
    for (const key of [...baseline, 'appEdited' as const]) store.put(contents[key]);
  });
  store.close();
  const db = new BetterSqlite(sessionPaths(home, id as SessionId).dbPath);
  const insert = db.prepare('INSERT INTO workspace_files (path, size, mode, hash, note) VALUES (?, ?, ?, ?, ?)');
  for (const key of baseline) insert.run(`src/${key}`, contents[key].length, 0o100644, hashes[key], null);
  insert.run('assets/huge.bin', 3 << 20, 0o100644, hugeHash, 'over the content cap');
  const seq = (db.prepare('SELECT max(seq) AS m FROM fs_events').get() as { m: number | null }).m ?? 100_000;
  db.prepare(
    `INSERT INTO fs_events (seq, event_id, timestamp, action, path, size, before_hash, after_hash, before_mode, after_mode)
     VALUES (?, ?, '2026-01-01T00:00:01.000Z', 'modified', 'src/app', ?, ?, ?, 33188, 33188)`,
  ).run(seq + 1, 'fffffffff001', contents.appEdited.length, hashes.app, hashes.appEdited);
  db.close();
}

function storeOf(home: ReturnType<typeof tempHome>): ContentStore {
  return ContentStore.open(home);
}

beforeAll(() => {
  const seeded = runCapsem(source.root, ['dev', 'seed', '--sessions', '2', '--events', '60', '--seed', '9']);
  expect(seeded.code, seeded.stderr).toBe(0);
  ids = seeded.stdout
    .trim()
    .split('\n')
    .slice(0, 2)
    .map((line) => line.split(/\s+/)[0]!);
  recordWorkspace(source, ids[0]!, ['readme', 'app', 'empty', 'binary', 'large']);
  // The second session was lent the same folder: its baseline shares every content with the first's.
  recordWorkspace(source, ids[1]!, ['readme', 'app', 'binary']);
}, 60_000);
afterAll(() => source.remove());

/** The members of a (plain tar) archive, by name. */
async function membersOf(file: string): Promise<Map<string, Buffer>> {
  const extract = tar.extract();
  const members = new Map<string, Buffer>();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        members.set(header.name, Buffer.concat(chunks));
        next();
      });
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  extract.end(readFileSync(file));
  await done;
  return members;
}

function exported(id: string, name: string): string {
  const file = join(source.root, name);
  const result = runCapsem(source.root, ['export', id, '-o', file]);
  expect(result.code, result.stderr).toBe(0);
  return file;
}

function importInto(home: ReturnType<typeof tempHome>, file: string): { code: number; stdout: string; stderr: string; id: string | null } {
  const result = runCapsem(home.root, ['import', file]);
  return { ...result, id: /^Imported session (\S+)/.exec(result.stdout)?.[1] ?? null };
}

describe('an archive carries the workspace contents', () => {
  it('round trip: every content the session names and the store keeps arrives byte for byte, and is kept once', async () => {
    const first = exported(ids[0]!, 'first.capsem');
    const members = await membersOf(first);
    const manifest = JSON.parse(members.get('manifest.json')!.toString('utf8')) as { formatVersion: number; members: { path: string }[] };
    expect(manifest.formatVersion).toBe(2);
    expect(manifest.members.map((m) => m.path)).toContain('contents.pack');

    const target = tempHome();
    try {
      const one = importInto(target, first);
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout).toContain(
        `  ${Object.keys(contents).length} workspace contents (files as the session saw them) checked and stored\n`,
      );
      let store = storeOf(target);
      for (const key of Object.keys(contents) as (keyof typeof contents)[])
        expect(store.get(hashes[key])?.equals(contents[key]), key).toBe(true);
      expect(store.has(hugeHash)).toBe(false);
      const afterOne = store.totals();
      store.close();
      expect(afterOne.objects).toBe(Object.keys(contents).length);

      // The same archive again, and the second session (whose contents the first already brought): nothing new is stored.
      expect(importInto(target, first).code).toBe(0);
      expect(importInto(target, exported(ids[1]!, 'second.capsem')).code).toBe(0);
      store = storeOf(target);
      expect(store.totals()).toEqual(afterOne);
      store.close();
      // The imported session names the contents it carried.
      const db = new BetterSqlite(sessionPaths(target, one.id as SessionId).dbPath, { readonly: true });
      expect(db.prepare('SELECT after_hash FROM fs_events WHERE after_hash IS NOT NULL').pluck().all()).toEqual([hashes.appEdited]);
      db.close();
    } finally {
      target.remove();
    }
  });

  it('imports an archive from before contents were carried (version 1, an older session.db)', async () => {
    const old = join(source.root, 'old.db');
    copyFileSync(sessionPaths(source, ids[1] as SessionId).dbPath, old);
    const db = new BetterSqlite(old);
    db.exec('DROP TABLE workspace_files');
    for (const column of ['before_hash', 'after_hash', 'before_mode', 'after_mode']) db.exec(`ALTER TABLE fs_events DROP COLUMN ${column}`);
    db.pragma('user_version = 7');
    db.close();
    const file = join(source.root, 'old.capsem');
    writeFileSync(file, await craftArchive({ 'session.db': readFileSync(old) }));
    const target = tempHome();
    try {
      const imported = importInto(target, file);
      expect(imported.code, imported.stderr).toBe(0);
      expect(runCapsem(target.root, ['check', imported.id!]).stdout).toContain('Findings: none');
      expect(existsSync(contentStorePath(target))).toBe(false);
    } finally {
      target.remove();
    }
  });
});

/** A contents pack written by hand, as an attacker would: any hash, encoding, size and data. */
function pack(objects: readonly { hash: string; encoding?: number; size: number; data: Buffer }[]): Buffer {
  const parts: Buffer[] = [Buffer.from('CSMCNT01', 'latin1')];
  for (const o of objects) {
    const head = Buffer.alloc(41);
    head.write(o.hash, 0, 'hex');
    head.writeUInt8(o.encoding ?? 0, 32);
    head.writeUInt32BE(o.size, 33);
    head.writeUInt32BE(o.data.length, 37);
    parts.push(head, o.data);
  }
  return Buffer.concat(parts);
}

describe('a hostile contents part is refused whole', () => {
  const raw = (key: keyof typeof contents) => ({ hash: hashes[key], size: contents[key].length, data: contents[key] });
  const bomb = deflateRawSync(Buffer.alloc(64 << 20));
  const cases: { name: string; pack: () => Buffer; version?: number; message: RegExp }[] = [
    {
      name: 'a content that is not what its hash names',
      pack: () => pack([raw('readme'), { ...raw('app'), data: Buffer.from(contents.app).fill(0x41, 0, 10) }]),
      message: new RegExp(`^capsem: contents.pack is refused: the content stated as ${hashes.app} hashes to [0-9a-f]{64}\\n$`),
    },
    {
      name: 'a deflate bomb (64 MiB of zeros stated as 100 bytes)',
      pack: () => pack([raw('readme'), { hash: hashes.app, encoding: 1, size: 100, data: bomb }]),
      message: new RegExp(`^capsem: contents.pack is refused: the content ${hashes.app} does not inflate to its stated 100 bytes`),
    },
    {
      name: 'an oversized content',
      pack: () => pack([{ hash: hashes.large, encoding: 1, size: 64 << 20, data: bomb }]),
      message: /^capsem: contents.pack is refused: the content [0-9a-f]{64} states 67108864 bytes, over the 2097152 a store keeps\n$/,
    },
    {
      name: 'a content the session does not name',
      pack: () => pack([raw('readme'), { hash: contentHash(text('planted')), size: 7, data: text('planted') }]),
      message: /^capsem: contents.pack is refused: it holds the content [0-9a-f]{64}, which the session does not name\n$/,
    },
    {
      name: 'a pack cut short',
      pack: () => pack([raw('readme'), raw('binary')]).subarray(0, -10),
      message: /^capsem: contents.pack is refused: it ends inside an object/,
    },
    {
      name: 'contents in a version 1 archive',
      version: 1,
      pack: () => pack([raw('readme')]),
      message: /^capsem: manifest.json lists "contents.pack", which a version 1 archive cannot hold\n$/,
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name}, storing nothing`, async () => {
      const file = join(source.root, `${c.name.replace(/\W+/g, '-')}.capsem`);
      const db = readFileSync(sessionPaths(source, ids[0] as SessionId).dbPath);
      writeFileSync(file, await craftArchive({ 'session.db': db, 'contents.pack': c.pack() }, { formatVersion: c.version ?? 2 }));
      const target = tempHome();
      try {
        // The store holds one content already, so a refusal that left part of the pack behind would show.
        const store = storeOf(target);
        store.put(contents.large);
        const before = store.totals();
        store.close();
        const refused = importInto(target, file);
        expect(refused.stderr).toMatch(c.message);
        expect(refused.code).toBe(1);
        expect(JSON.parse(runCapsem(target.root, ['list', '--json']).stdout)).toEqual([]);
        expect(existsSync(join(target.runDir, 'staging'))).toBe(false);
        const after = storeOf(target);
        expect(after.totals()).toEqual(before);
        after.close();
      } finally {
        target.remove();
      }
    });
  }
});
