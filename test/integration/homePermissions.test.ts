import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCapsem } from '../helpers/runCapsem.ts';

// CAPSEM_HOME may be a folder the user already had (CAPSEM_HOME=$HOME/work, a shared folder): its
// mode is theirs. Only a CAPSEM_HOME that Capsem creates is made 0700; the folders Capsem creates
// inside it are private either way.

const parent = mkdtempSync(join(tmpdir(), 'capsem-home-mode-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

const modeOf = (path: string): number => statSync(path).mode & 0o777;

it('leaves an existing 0755 CAPSEM_HOME at 0755 through list and record, and keeps its own folders 0700', () => {
  const home = join(parent, 'shared');
  mkdirSync(home);
  chmodSync(home, 0o755);

  const listed = runCapsem(home, ['list']);
  expect(listed.code, listed.stderr).toBe(0);
  expect(modeOf(home).toString(8)).toBe('755');

  const recorded = runCapsem(home, ['record', '--', 'true']);
  expect(recorded.code, recorded.stderr).toBe(0);
  expect(modeOf(home).toString(8)).toBe('755');
  const sessions = readdirSync(join(home, 'run', 'sessions'));
  expect(sessions).toHaveLength(1);
  for (const dir of ['run', 'run/sessions', `run/sessions/${sessions[0]}`, 'sessions'])
    expect(modeOf(join(home, dir)).toString(8), dir).toBe('700');
});

it('creates a missing CAPSEM_HOME 0700', () => {
  const home = join(parent, 'fresh', 'capsem');
  const listed = runCapsem(home, ['list']);
  expect(listed.code, listed.stderr).toBe(0);
  expect(modeOf(home).toString(8)).toBe('700');
});
