import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let ids: string[] = [];
beforeAll(() => {
  const seeded = runCapsem(home.root, ['dev', 'seed', '--sessions', '2', '--events', '120', '--seed', '5']);
  expect(seeded.code, seeded.stderr).toBe(0);
  ids = seeded.stdout.trim().split('\n').slice(0, 2).map((line) => line.split(/\s+/)[0]!);
}, 60_000);
afterAll(() => home.remove());

describe('capsem export, import and vacuum', () => {
  it('has --help on each command', () => {
    for (const [command, first] of [['export', 'capsem export ID|NAME'], ['import', 'capsem import FILE'], ['vacuum', 'capsem vacuum [--older-than 30d]']] as const) {
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
    expect(exported.stdout).toMatch(new RegExp(`^Exported session ${ids[0]} \\(co-work1\\) as archive to ${file}: \\d+ bytes, 1 members\\n$`));
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
