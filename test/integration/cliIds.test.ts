import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { seededSessions } from '../helpers/seedOutput.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Ids as people see them: the window shows a session's id by its first 8 characters, and the real
// `capsem`, run from a user's folder, takes them wherever it takes a session. A prefix two ids share
// is refused with both listed; a prefix is never a name, and a name never a prefix.

const home = tempHome();
let seeded: { id: string; name: string }[] = [];
afterAll(() => home.remove());

beforeAll(async () => {
  const seed = await runCapsemAsync(home.root, ['dev', 'seed', '--sessions', '2', '--events', '40', '--seed', '11']);
  expect(seed.code, seed.stderr).toBe(0);
  seeded = seededSessions(seed.stdout, 2);
  // Two sessions whose ids share their first 8 characters (ids are random; an import can bring any).
  const db = new Database(join(home.root, 'sessions/main.db'));
  const enter = db.prepare(
    "INSERT INTO sessions (id, name, resumable, mode, status, created_at, updated_at) VALUES (?, ?, 0, 'imported', 'stopped', ?, ?)",
  );
  enter.run('af0d40d4-1111-4111-8111-111111111111', 'twin-one', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z');
  enter.run('af0d40d4-2222-4222-8222-222222222222', null, '2025-01-02T00:00:00.000Z', '2025-01-02T00:00:00.000Z');
  db.close();
}, 120_000);

describe('the start of an id, as the window shows it', () => {
  it('capsem check, sql and rename take 8 characters of an id', async () => {
    const { id, name } = seeded[0]!;
    const check = await runCapsemAsync(home.root, ['check', id.slice(0, 8)]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(`Session ${id} (${name}), status stopped`);
    const sql = await runCapsemAsync(home.root, ['sql', id.slice(0, 8).toUpperCase(), 'SELECT count(*) AS n FROM net_events', '--json']);
    expect(sql.code, sql.stderr).toBe(0);
    expect((JSON.parse(sql.stdout) as { n: number }[])[0]!.n).toBeGreaterThan(0);
    const rename = await runCapsemAsync(home.root, ['rename', id.slice(0, 13), 'deadbeef']);
    expect(rename.stdout.trim()).toBe(`renamed ${id} from ${name} to deadbeef`);
  }, 120_000);

  it('capsem stop resolves 8 characters to the session before it says it is not running', async () => {
    const { id } = seeded[1]!;
    const stop = await runCapsemAsync(home.root, ['stop', id.slice(0, 8)]);
    expect(stop.code).toBe(1);
    expect(stop.stderr).toContain(`session ${id} (${seeded[1]!.name}) is not running`);
  }, 60_000);

  it('a prefix two ids share is refused by every command, listing both with their names', async () => {
    for (const args of [
      ['check', 'af0d40d4'],
      ['stop', 'AF0D40D4'],
      ['sql', 'af0d40d4-', 'SELECT 1'],
    ]) {
      const refused = await runCapsemAsync(home.root, args);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stderr).toContain(`is the start of 2 session ids; use more of the id: `);
      expect(refused.stderr).toContain('af0d40d4-2222-4222-8222-222222222222 (unnamed, created 2025-01-02T00:00:00.000Z)');
      expect(refused.stderr).toContain('af0d40d4-1111-4111-8111-111111111111 (twin-one, created 2025-01-01T00:00:00.000Z)');
    }
    const longer = await runCapsemAsync(home.root, ['stop', 'af0d40d4-2']);
    expect(longer.stderr).toContain('session af0d40d4-2222-4222-8222-222222222222 is not running');
  }, 120_000);

  it('fewer than 8 characters are no id, and the start of a name is no name', async () => {
    const short = await runCapsemAsync(home.root, ['check', seeded[1]!.id.slice(0, 7)]);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('(an id matches from its first 8 characters)');
    const partName = await runCapsemAsync(home.root, ['check', seeded[1]!.name.slice(0, -1)]);
    expect(partName.code).toBe(1);
    expect(partName.stderr).toMatch(/no session with id or name .*close matches: /);
  }, 60_000);

  it('a display name that looks like hex is still a name', async () => {
    const check = await runCapsemAsync(home.root, ['check', 'deadbeef']);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(`Session ${seeded[0]!.id} (deadbeef)`);
  }, 60_000);
});
