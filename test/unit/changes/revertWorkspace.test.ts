import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContentStore, contentHash, KEPT_CONTENT_MAX } from '../../../electron/changes/contentStore.ts';
import { revertWorkspace } from '../../../electron/changes/revertWorkspace.ts';
import { MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK } from '../../../electron/changes/workspaceEntry.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// A revert writes only inside the workspace folder, keeps what it replaces, and leaves a path with
// the reason where it cannot do both.

const home = tempHome();
const store = ContentStore.open(home);
let root: string;
afterAll(() => {
  store.close();
  home.remove();
});
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'capsem-revert-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const kept = (text: string, mode = MODE_FILE) => ({ hash: store.put(Buffer.from(text)), mode });

describe('revertWorkspace', () => {
  it('writes a file, an executable and a symlink back, keeping and recording what was there', () => {
    writeFileSync(join(root, 'a.txt'), 'now\n');
    const outcome = revertWorkspace(root, store, [
      { path: 'a.txt', restore: kept('before\n') },
      { path: 'deep/new/run.sh', restore: kept('#!/bin/sh\n', MODE_EXECUTABLE) },
      { path: 'link', restore: kept('a.txt', MODE_SYMLINK) },
    ]);
    expect(outcome.refused).toEqual([]);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('before\n');
    expect(lstatSync(join(root, 'deep/new/run.sh')).mode & 0o777).toBe(0o755);
    expect(readlinkSync(join(root, 'link'))).toBe('a.txt');
    const row = outcome.rows.find((r) => r.path === 'a.txt')!;
    expect(row).toMatchObject({
      action: 'restored',
      before_hash: contentHash(Buffer.from('now\n')),
      after_hash: contentHash(Buffer.from('before\n')),
    });
    expect(store.get(row.before_hash!)!.toString()).toBe('now\n');
  });

  it('writes nothing through a symlink to a folder outside the workspace', () => {
    const outside = mkdtempSync(join(tmpdir(), 'capsem-outside-'));
    try {
      symlinkSync(outside, join(root, 'etc'));
      const outcome = revertWorkspace(root, store, [{ path: 'etc/passwd', restore: kept('root::0:0\n') }]);
      expect(outcome.restored).toEqual([]);
      expect(outcome.refused[0]!.reason).toMatch(/symlink/);
      expect(spawnSync('ls', ['-A', outside]).stdout.toString()).toBe('');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('replaces a symlink at the path itself instead of writing through it', () => {
    const outside = join(mkdtempSync(join(tmpdir(), 'capsem-target-')), 'target');
    writeFileSync(outside, 'theirs');
    symlinkSync(outside, join(root, 'f'));
    expect(revertWorkspace(root, store, [{ path: 'f', restore: kept('mine') }]).refused).toEqual([]);
    expect(readFileSync(outside, 'utf8')).toBe('theirs');
    expect(lstatSync(join(root, 'f')).isFile()).toBe(true);
  });

  it('refuses, with the reason, what it cannot keep or cannot put back, and a hostile path', () => {
    writeFileSync(join(root, 'big'), Buffer.alloc(KEPT_CONTENT_MAX + 1, 1));
    mkdirSync(join(root, 'dir'));
    const outcome = revertWorkspace(root, store, [
      { path: 'big', restore: kept('small') },
      { path: 'dir', restore: kept('x') },
      { path: 'gone', restore: { hash: contentHash(Buffer.from('never kept')), mode: MODE_FILE } },
      { path: 'never', restore: 'unknown' },
      { path: '../escape', restore: kept('x') },
    ]);
    expect(outcome.restored).toEqual([]);
    expect(outcome.refused.map((r) => [r.path, r.reason])).toEqual([
      ['big', expect.stringMatching(/over 2 MiB and cannot be kept/)],
      ['dir', expect.stringMatching(/a folder is there now/)],
      ['gone', expect.stringMatching(/content before is not kept/)],
      ['never', expect.stringMatching(/not recorded/)],
      ['../escape', expect.stringMatching(/\.\. part/)],
    ]);
    expect(lstatSync(join(root, 'big')).size).toBe(KEPT_CONTENT_MAX + 1);
  });
});
