import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContentStore } from '../../electron/changes/contentStore.ts';
import { capsemHome, sessionPaths } from '../../electron/store/paths.ts';
import { AnthropicStory } from '../helpers/agentStory.ts';
import { runCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { liveSession } from '../helpers/sessionFixture.ts';
import { recordEditSession, treeOf, WorkspaceScene } from '../helpers/workspaceScene.ts';

// `capsem diff` and `capsem revert` as a user runs them, from a folder outside the checkout, on a
// session recorded through the pipeline with a baseline and three turns of changes.

const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
let home: string;
let snapshots: { baseline: string; beforeTurn1: string; final: string };
let workspace: string;
let running: string;

/** The patch as bytes: names and contents go through unchanged, whatever their encoding. */
function diffBytes(args: string[]): { code: number; patch: Buffer; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, 'diff', ...args], { env: { ...process.env, CAPSEM_HOME: home }, cwd: USER_FOLDER });
  return { code: r.status ?? -1, patch: r.stdout, stderr: r.stderr.toString() };
}

function applied(tool: 'git' | 'patch', base: string, patch: Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), `capsem-apply-${tool}-`));
  cpSync(base, dir, { recursive: true, verbatimSymlinks: true });
  const r =
    tool === 'git'
      ? spawnSync('git', ['apply', '--whitespace=nowarn', '-'], { cwd: dir, input: patch })
      : spawnSync('patch', ['-p1', '--quiet'], { cwd: dir, input: patch });
  expect(r.stderr.toString(), `${tool} failed`).toBe('');
  expect(r.status).toBe(0);
  return dir;
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'capsem-changes-'));
  const capsem = capsemHome({ CAPSEM_HOME: home });
  const live = await liveSession(capsem, 'edits');
  workspace = sessionPaths(capsem, live.id).workspaceDir;
  const store = ContentStore.open(capsem);
  snapshots = await recordEditSession(live, store, workspace, mkdtempSync(join(tmpdir(), 'capsem-snap-')), new AnthropicStory(live));
  await live.end();
  // A second session whose baseline file's content was not kept, left running.
  const other = await liveSession(capsem, 'unkept');
  running = other.id;
  const scene = new WorkspaceScene(other, store, sessionPaths(capsem, other.id).workspaceDir);
  scene.baseline({ 'big.bin': 'too big to keep\n' }, ['big.bin']);
  scene.write('big.bin', 'changed\n', Date.now());
  await other.recorder.settled();
  await other.writer.flush();
  store.close();
}, 60_000);

afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('capsem diff', () => {
  it('prints a patch that git apply and patch -p1 turn the baseline into the final folder, byte for byte', () => {
    const { code, patch, stderr } = diffBytes(['edits']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(patch.toString('latin1')).toContain('diff --git "a/src/new\\nname \\"q\\" \\\\ \\303\\251.ts"');
    expect(treeOf(applied('git', snapshots.baseline, patch))).toEqual(treeOf(snapshots.final));
    expect(treeOf(applied('patch', snapshots.baseline, patch))).toEqual(treeOf(snapshots.final));
  });

  it("prints one turn's changes: the state before its first change to after its last", () => {
    const { code, patch } = diffBytes(['edits', '--turn', '0']);
    expect(code).toBe(0);
    expect(treeOf(applied('git', snapshots.baseline, patch))).toEqual(treeOf(snapshots.beforeTurn1));
  });

  it('leaves out a path whose content was not kept, says so on stderr and exits 1', () => {
    const { code, patch, stderr } = diffBytes(['unkept']);
    expect(code).toBe(1);
    expect(patch.length).toBe(0);
    expect(stderr).toMatch(/left out "big\.bin": before: its content is not kept/);
  });
});

describe('capsem revert', () => {
  it('puts the folder back as it was before turn 1, and a revert of that revert puts it back again', () => {
    const r = runCapsem(home, ['revert', 'edits', '--turn', '1']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('removed  "user.txt"');
    expect(r.stdout).toContain('restored "notes/old.txt"');
    expect(treeOf(workspace)).toEqual(treeOf(snapshots.beforeTurn1));

    const seqs = JSON.parse(
      runCapsem(home, ['sql', 'edits', "SELECT seq FROM fs_events WHERE action = 'restored' ORDER BY seq", '--json']).stdout,
    ) as {
      seq: number;
    }[];
    expect(seqs.length).toBeGreaterThan(0);
    for (const { seq } of seqs) expect(runCapsem(home, ['revert', 'edits', '--change', String(seq)]).code).toBe(0);
    expect(treeOf(workspace)).toEqual(treeOf(snapshots.final));
  });

  it('puts paths back as they were before the session', () => {
    const r = runCapsem(home, ['revert', 'edits', 'src', 'README.md']);
    expect(r.code).toBe(0);
    const tree = treeOf(workspace);
    const base = treeOf(snapshots.baseline);
    expect(tree['src/app.ts']).toBe(base['src/app.ts']);
    expect(tree['README.md']).toBe(base['README.md']);
    expect(Object.keys(tree).filter((p) => p.startsWith('src/'))).toEqual(['src/app.ts']);
  });

  it('refuses a session another process records, naming where to revert it and how to stop it', () => {
    const r = runCapsem(home, ['revert', 'unkept', 'big.bin']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`session ${running} is being recorded by another Capsem process`);
  });

  it('says how it is used, and is listed among the commands', () => {
    for (const command of ['diff', 'revert'])
      expect(runCapsem(home, [command, '--help']).stdout).toMatch(new RegExp(`^capsem ${command} ID\\|NAME`));
    expect(runCapsem(home, ['--help']).stdout).toMatch(/diff .*\n.*revert /s);
  });

  it('refuses a target without a change, and a revert without a target', () => {
    expect(runCapsem(home, ['revert', 'edits', '--turn', '3']).stderr).toContain('turn 3 changed no file');
    expect(runCapsem(home, ['revert', 'edits']).code).toBe(2);
  });
});
