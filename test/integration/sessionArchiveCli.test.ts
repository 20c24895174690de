import BetterSqlite from 'better-sqlite3';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionId } from '../../electron/contract/ids.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { craftArchive } from '../helpers/craftArchive.ts';
import { runCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let ids: string[] = [];
beforeAll(() => {
  const seeded = runCapsem(home.root, ['dev', 'seed', '--sessions', '2', '--events', '120', '--seed', '5']);
  expect(seeded.code, seeded.stderr).toBe(0);
  ids = seeded.stdout
    .trim()
    .split('\n')
    .slice(0, 2)
    .map((line) => line.split(/\s+/)[0]!);
}, 60_000);
afterAll(() => home.remove());

describe('capsem export, import and vacuum', () => {
  it('has --help on each command', () => {
    for (const [command, first] of [
      ['export', 'capsem export ID|NAME'],
      ['import', 'capsem import FILE'],
      ['vacuum', 'capsem vacuum [--older-than 30d]'],
    ] as const) {
      const { code, stdout } = runCapsem(home.root, [command, '--help']);
      expect(code, command).toBe(0);
      expect(stdout.startsWith(first)).toBe(true);
    }
    expect(runCapsem(home.root, ['--help']).stdout).toMatch(/export .*\n.*import .*\n.*vacuum /);
  });

  it('reports mistakes on one line with exit 2, and an unknown name with close matches', () => {
    const bad = runCapsem(home.root, ['export', 'co-work1', '--format', 'zip']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('capsem: --format takes archive, har or jsonl, not "zip"\n');
    expect(runCapsem(home.root, ['import']).stderr).toMatch(/^capsem: import takes one file/);
    expect(runCapsem(home.root, ['vacuum', '--older-than', 'soon']).stderr).toMatch(/^capsem: --older-than: "soon" is not an age/);
    const unknown = runCapsem(home.root, ['export', 'co-wrok1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`capsem: no session with id or name "co-wrok1"; close matches: co-work1 (${ids[0]})\n`);
    const missing = runCapsem(home.root, ['import', join(home.root, 'nope.capsem')]);
    expect(missing.stderr).toMatch(/^capsem: no file at .*nope.capsem\n$/);
  });

  it('exports by name and imports it back under a new id and name', () => {
    const file = join(home.root, 'out.capsem');
    const exported = runCapsem(home.root, ['export', 'co-work1', '-o', file]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(
      new RegExp(`^Exported session ${ids[0]} \\(co-work1\\) as archive to ${file}: \\d+ bytes, 1 members\\n$`),
    );
    expect(runCapsem(home.root, ['export', 'co-work1', '-o', file]).stderr).toMatch(/already exists/);
    const imported = runCapsem(home.root, ['import', file]);
    expect(imported.code, imported.stderr).toBe(0);
    const [, id, name] = /^Imported session (\S+) \((\S+)\)/.exec(imported.stdout)!;
    expect(name).toBe('co-work1-2');
    expect(id).not.toBe(ids[0]);
    const listed = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string; name: string; status: string }[];
    expect(listed.find((s) => s.id === id)).toMatchObject({ name: 'co-work1-2', status: 'stopped' });
    expect(runCapsem(home.root, ['check', 'co-work1-2']).stdout).toContain('Findings: none');
  });

  it('refuses a crafted file with its reason and writes nothing', () => {
    const file = join(home.root, 'bad.capsem');
    writeFileSync(file, 'not an archive');
    const refused = runCapsem(home.root, ['import', file]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`capsem: ${file} is neither a Capsem session archive nor a session.db\n`);
    expect(existsSync(join(home.runDir, 'staging'))).toBe(false);
  });

  describe('a session.db that carries code', () => {
    // A row a planted trigger would write: its domain marks it.
    const planted = (eventId: string): string =>
      `INSERT INTO net_events (event_id, seq, timestamp, domain, decision) VALUES ('${eventId}', (SELECT coalesce(max(seq), 0) + 1 FROM net_events), '2030-01-01T00:00:00Z', 'planted.example', 'allowed')`;
    const cases: { name: string; sql: string; kept?: boolean; refusal?: RegExp; dropped?: string[] }[] = [
      {
        name: 'triggers on the tables an import writes, and an index on an expression',
        sql: `CREATE TRIGGER planted_insert AFTER INSERT ON session_meta BEGIN ${planted('ffffffffff01')}; END;
              CREATE TRIGGER planted_update BEFORE UPDATE ON session_meta BEGIN ${planted('ffffffffff02')}; END;
              CREATE INDEX planted_index ON session_meta(upper(value))`,
        dropped: ['trigger "planted_insert"', 'trigger "planted_update"', 'index "planted_index"'],
      },
      {
        name: 'a view standing where session_meta should be, with a trigger that runs instead of our insert',
        sql: `DROP TABLE session_meta;
              CREATE VIEW session_meta AS SELECT 'name' AS key, 'from-a-view' AS value;
              CREATE TRIGGER planted_instead INSTEAD OF INSERT ON session_meta BEGIN ${planted('ffffffffff03')}; END`,
        dropped: ['trigger "planted_instead"', 'view "session_meta"'],
      },
      {
        name: 'an fts5 virtual table',
        sql: "CREATE VIRTUAL TABLE planted_fts USING fts5(body); INSERT INTO planted_fts VALUES ('hello')",
        refusal: /^capsem: session.db holds the virtual table "planted_fts" \(fts5\); an imported session may hold plain tables only\n$/,
      },
      {
        name: 'an rtree virtual table standing where fs_events should be',
        sql: 'DROP TABLE fs_events; CREATE VIRTUAL TABLE fs_events USING rtree(id, min_x, max_x)',
        refusal: /^capsem: session.db holds the virtual table "fs_events" \(rtree\); an imported session may hold plain tables only\n$/,
      },
    ];

    function plantedFile(name: string, sql: string): string {
      const file = join(home.root, `${name.replace(/\W+/g, '-').slice(0, 40)}.db`);
      copyFileSync(sessionPaths(home, ids[0] as SessionId).dbPath, file);
      const db = new BetterSqlite(file);
      db.exec(sql);
      db.close();
      return file;
    }

    function schemaAndPlantedRows(id: string): { objects: string[]; planted: number; metaType: string } {
      const db = new BetterSqlite(sessionPaths(home, id as SessionId).dbPath, { readonly: true });
      try {
        return {
          objects: (
            db
              .prepare("SELECT type || ' ' || name AS o FROM sqlite_master WHERE name LIKE 'planted%' OR type IN ('trigger', 'view')")
              .all() as { o: string }[]
          ).map((r) => r.o),
          planted: (db.prepare("SELECT count(*) AS n FROM net_events WHERE domain = 'planted.example'").get() as { n: number }).n,
          metaType: (db.prepare("SELECT type FROM sqlite_master WHERE name = 'session_meta'").get() as { type: string }).type,
        };
      } finally {
        db.close();
      }
    }

    for (const c of cases) {
      for (const wrapping of ['bare', 'in an archive'] as const) {
        it(`${c.refusal ? 'refuses' : 'drops what would run from'} ${c.name} (${wrapping})`, async () => {
          let file = plantedFile(c.name, c.sql);
          if (wrapping === 'in an archive') {
            const archive = `${file}.capsem`;
            writeFileSync(archive, await craftArchive({ 'session.db': readFileSync(file) }));
            file = archive;
          }
          const before = runCapsem(home.root, ['list', '--json']).stdout;
          const imported = runCapsem(home.root, ['import', file]);
          expect(existsSync(join(home.runDir, 'staging'))).toBe(false);
          if (c.refusal) {
            expect(imported.stderr).toMatch(c.refusal);
            expect(imported.code).toBe(1);
            expect(runCapsem(home.root, ['list', '--json']).stdout).toBe(before);
            return;
          }
          expect(imported.code, imported.stderr).toBe(0);
          const id = /^Imported session (\S+)/.exec(imported.stdout)![1]!;
          expect(schemaAndPlantedRows(id)).toEqual({ objects: [], planted: 0, metaType: 'table' });
          expect(imported.stdout).toContain(`  dropped from the imported copy, so none of it runs: ${c.dropped!.join(', ')}`);
          expect(runCapsem(home.root, ['check', id]).stdout).toContain('Findings: none');
        });
      }
    }
  });

  it('writes HAR and JSONL', () => {
    const har = join(home.root, 'out.har');
    expect(runCapsem(home.root, ['export', ids[1]!, '--format', 'har', '-o', har]).code).toBe(0);
    expect((JSON.parse(readFileSync(har, 'utf8')) as { log: { version: string } }).log.version).toBe('1.2');
    const jsonl = join(home.root, 'out.jsonl');
    expect(runCapsem(home.root, ['export', ids[1]!, '--format', 'jsonl', '-o', jsonl]).code).toBe(0);
    expect(readFileSync(jsonl, 'utf8').trimEnd().split('\n').length).toBeGreaterThan(100);
  });

  it('vacuums ended sessions: list --all shows them without *, and export still works', () => {
    const dry = runCapsem(home.root, ['vacuum', '--older-than', '0d', '--dry-run', '--include-resumable']);
    expect(dry.stdout).toMatch(/would vacuum/);
    const run = runCapsem(home.root, ['vacuum', '--older-than', '0s', '--include-resumable']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`vacuumed ${ids[1]}`));
    const all = runCapsem(home.root, ['list', '--all']).stdout;
    expect(all).toMatch(new RegExp(`^${ids[1]}\\s+\\S+\\s+vacuumed`, 'm'));
    expect(runCapsem(home.root, ['list']).stdout).not.toContain(ids[1]);
    const out = join(home.root, 'vacuumed.capsem');
    const exported = runCapsem(home.root, ['export', ids[1]!, '-o', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(runCapsem(home.root, ['import', out]).code).toBe(0);
  });
});
