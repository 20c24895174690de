import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { openSessionDbForWriting, SESSION_DB_MIGRATIONS } from '../../../electron/store/sessionDb.ts';
import { SESSION_TABLE_NAMES, SESSION_TABLES, type TableDef } from '../../../electron/store/sessionSchema.ts';
import { parseSpecTables, readSpec, specPaths } from '../../helpers/specSchema.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

describe('session.db schema holds the spec', () => {
  const spec = parseSpecTables(readSpec());
  const db = openSessionDbForWriting(`${home.root}/session.db`);

  it('finds the spec tables it is meant to check', () => {
    expect([...spec.keys()].sort()).toEqual(['fs_events', 'model_calls', 'net_events', 'tool_calls', 'tool_responses']);
    expect(spec.get('net_events')!.length).toBeGreaterThan(15);
  });

  for (const [table, columns] of spec) {
    it(`${table} has every spec column with its type, NOT NULL and default`, () => {
      const info = db.prepare(`PRAGMA table_info(${table})`).all() as {
        name: string;
        type: string;
        notnull: number;
        dflt_value: string | null;
        pk: number;
      }[];
      expect(info.length, `table ${table} exists`).toBeGreaterThan(0);
      const byName = new Map(info.map((c) => [c.name, c]));
      for (const col of columns) {
        const actual = byName.get(col.name);
        expect(actual, `${table}.${col.name} exists`).toBeDefined();
        expect(actual!.type, `${table}.${col.name} type`).toBe(col.type);
        expect(actual!.notnull === 1, `${table}.${col.name} NOT NULL`).toBe(col.notNull);
        expect(actual!.dflt_value, `${table}.${col.name} default`).toBe(col.defaultValue);
        expect(actual!.pk > 0, `${table}.${col.name} primary key`).toBe(col.primaryKey);
      }
    });
  }

  it("asks of a database exactly the spec DDL: every other table and column is marked as the prose's or ours", () => {
    const tables: Record<string, TableDef> = SESSION_TABLES;
    const required = SESSION_TABLE_NAMES.filter((t) => !tables[t]!.ours && !tables[t]!.prose);
    expect(required.sort()).toEqual([...spec.keys()].sort());
    for (const table of required) {
      const columns = Object.entries(tables[table]!.columns)
        .filter(([, c]) => !c.ours && !c.prose)
        .map(([name]) => name);
      expect(columns.sort(), table).toEqual(
        spec
          .get(table)!
          .map((c) => c.name)
          .sort(),
      );
    }
  });

  it('rejects an event_id that is not 12 lowercase hex characters', () => {
    const insert = db.prepare(
      "INSERT INTO fs_events (seq, event_id, timestamp, action, path) VALUES (?, ?, '2026-01-01T00:00:00Z', 'created', 'a')",
    );
    expect(() => insert.run(1, 'ABCDEF012345')).toThrow(/CHECK/);
    expect(() => insert.run(2, 'abc')).toThrow(/CHECK/);
    expect(() => insert.run(3, 'abcdef012345')).not.toThrow();
  });

  it('the vendored spec copy matches the shared spec when both are present', () => {
    const { shared, vendored } = specPaths();
    if (!shared) {
      console.warn('skipping: ../shared/spec/session-db.md is not beside this checkout; using the vendored copy');
      return;
    }
    expect(readFileSync(vendored, 'utf8')).toBe(readFileSync(shared, 'utf8'));
  });

  it('is readable by a plain SQLite connection', () => {
    const plain = new Database(`${home.root}/session.db`, { readonly: true });
    expect(plain.pragma('user_version', { simple: true })).toBe(SESSION_DB_MIGRATIONS.at(-1)!.version);
    plain.close();
  });
});
