import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let ids: { id: string; name: string }[] = [];
beforeAll(() => {
  const seeded = runCapsem(home.root, ['dev', 'seed', '--sessions', '4', '--events', '120', '--seed', '11']);
  expect(seeded.code, seeded.stderr).toBe(0);
  ids = seeded.stdout
    .trim()
    .split('\n')
    .slice(0, 4)
    .map((line) => {
      const [id, name] = line.split(/\s+/);
      return { id: id!, name: name! };
    });
}, 60_000);
afterAll(() => home.remove());

describe('capsem CLI', () => {
  it('lists seeded sessions newest first, with * for sessions on disk and both id and name', () => {
    const { code, stdout } = runCapsem(home.root, ['list']);
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STATUS\s+CREATED\s+DURATION\s+COST\s+NET\s+TOKENS\(in\+out\)\s+TOOLS\s+MCP\s+FS$/);
    expect(lines).toHaveLength(5);
    expect(lines[1]).toContain(`${ids[3]!.id}*`);
    expect(lines[1]).toMatch(/crashed/);
    expect(lines[4]).toMatch(new RegExp(`^${ids[0]!.id}\\*\\s+co-work1\\s+stopped\\s+\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d`));
  });

  it('prints JSON with id and name, and honours -n and filters', () => {
    const all = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as {
      id: string;
      name: string | null;
      totals: { requests: number; costUsd: number };
    }[];
    expect(all.map((s) => s.id)).toEqual(ids.map((s) => s.id).reverse());
    expect(all.find((s) => s.id === ids[0]!.id)!.name).toBe('co-work1');
    expect(JSON.parse(runCapsem(home.root, ['list', '-n', '2', '--json']).stdout)).toHaveLength(2);
    const rich = JSON.parse(runCapsem(home.root, ['list', '--json', '--min-cost', '1000000']).stdout);
    expect(rich).toEqual([]);
    const withMcp = JSON.parse(
      runCapsem(home.root, ['list', '--json', '--with-mcp', '--with-model', '--with-net', '--with-db']).stdout,
    ) as unknown[];
    expect(withMcp.length).toBeGreaterThan(0);
  });

  it('checks a session by display name and exits 0 when it is clean', () => {
    const { code, stdout } = runCapsem(home.root, ['check', 'co-work1']);
    expect(code).toBe(0);
    expect(stdout).toContain(`Session ${ids[0]!.id} (co-work1)`);
    expect(stdout).toContain('Findings: none');
    const json = JSON.parse(runCapsem(home.root, ['check', ids[1]!.id, '--json', '-n', '2']).stdout);
    expect(json.id).toBe(ids[1]!.id);
    expect(json.tables.net_events.preview).toHaveLength(2);
  });

  it('check exits non-zero with a finding on a defective database', () => {
    const path = `${home.root}/defective.db`;
    copyFileSync(`${home.root}/run/sessions/${ids[2]!.id}/session.db`, path);
    const db = new Database(path);
    db.prepare('DELETE FROM tool_responses WHERE id = (SELECT min(id) FROM tool_responses)').run();
    db.close();
    const broken = runCapsem(home.root, ['check', '--db', path]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/FINDING \[orphaned tool_calls\] tool_calls with no tool_responses in the same trace \(1\)/);
    expect(broken.stdout).toMatch(/likely cause: The model invoked a tool/);
  });

  it('runs read-only SQL by name and refuses writes', () => {
    const ok = runCapsem(home.root, [
      'sql',
      'co-work1',
      'SELECT provider, count(*) AS n FROM model_calls GROUP BY provider ORDER BY provider',
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^provider\s+n$/m);
    const refused = runCapsem(home.root, ['sql', 'co-work1', 'DELETE FROM net_events']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe('capsem: query refused: capsem sql runs read-only queries (SELECT, WITH, PRAGMA reads)');
    const after = runCapsem(home.root, ['sql', 'co-work1', 'SELECT count(*) AS n FROM net_events', '--json']);
    expect(JSON.parse(after.stdout)[0].n).toBeGreaterThan(0);
  });

  it('explains an unknown session with close matches, in one line, exit 1', () => {
    const { code, stderr } = runCapsem(home.root, ['check', 'co-wrk1']);
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(`close matches: co-work1 (${ids[0]!.id})`);
  });

  it('gives usage errors exit 2 and every command has --help', () => {
    expect(runCapsem(home.root, ['list', '--bogus']).code).toBe(2);
    expect(runCapsem(home.root, ['frobnicate']).stderr).toMatch(/unknown command "frobnicate"/);
    expect(runCapsem(home.root, ['list', '-n', 'many']).stderr.trim()).toBe('capsem: -n takes a whole number, not "many"');
    for (const command of ['list', 'check', 'sql', 'dev']) {
      const help = runCapsem(home.root, [command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(new RegExp(`^capsem ${command}`));
    }
    expect(runCapsem(home.root, ['--help']).stdout).toMatch(/list .*\n.*check/s);
  });

  it('honours CAPSEM_HOME: an empty home lists nothing and check says what to do', () => {
    const empty = tempHome();
    expect(runCapsem(empty.root, ['list']).stdout).toMatch(/No sessions match/);
    const check = runCapsem(empty.root, ['check']);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/no session with a session.db on disk/);
    empty.remove();
  });
});
