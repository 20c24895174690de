import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContentStore, contentHash, KEPT_CONTENT_MAX } from '../../../electron/changes/contentStore.ts';
import {
  readBaselineSummary,
  recordWorkspaceBaseline,
  resumedVersions,
  scanWorkspace,
  type BaselineFile,
} from '../../../electron/changes/workspaceBaseline.ts';
import { MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK } from '../../../electron/changes/workspaceEntry.ts';

// The workspace as a session finds it: what `git add -A` would take, each content in the store,
// and every odd thing a user's folder can hold named rather than failing the whole.

let dir: string;
let ws: string;
let store: ContentStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'capsem-baseline-'));
  ws = join(dir, 'ws');
  mkdirSync(ws);
  store = ContentStore.openFile(join(dir, 'content.db'));
});
// Removing 100,000 files takes this disk a minute.
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
}, 180_000);

function write(path: string, content: string | Buffer): void {
  mkdirSync(join(ws, path, '..'), { recursive: true });
  writeFileSync(join(ws, path), content);
}

const byPath = (manifest: readonly BaselineFile[]) => new Map(manifest.map((f) => [f.path, f]));

describe('workspace baseline', () => {
  it('takes what git would: .gitignore files honoured at every level (a deeper one can take a path back), .git/ and node_modules/ left out', async () => {
    write('.gitignore', '*.log\nbuild/\n');
    write('src/app.ts', 'export const a = 1;\n');
    write('src/debug.log', 'noise');
    write('build/out.js', 'built');
    write('pkg/.gitignore', '!keep.log\nsecret.txt\n');
    write('pkg/keep.log', 'kept');
    write('pkg/secret.txt', 'hidden');
    write('pkg/deep/secret.txt', 'hidden too');
    write('other/secret.txt', 'not hidden here');
    write('.git/HEAD', 'ref: refs/heads/main\n');
    write('node_modules/x/index.js', 'module');
    write('web/node_modules/y/index.js', 'module');
    const baseline = await scanWorkspace(ws, store);
    expect(baseline.manifest.map((f) => f.path)).toEqual([
      '.gitignore',
      'other/secret.txt',
      'pkg/.gitignore',
      'pkg/keep.log',
      'src/app.ts',
    ]);
    // Ignored by git's own reading too: the list `git add -A` stages, less the dependency folders.
    execFileSync('git', ['init', '-q', ws]);
    execFileSync('git', ['-C', ws, 'add', '-A']);
    const staged = execFileSync('git', ['-C', ws, 'ls-files'], { encoding: 'utf8' }).trim().split('\n');
    expect(staged.filter((p) => !p.includes('node_modules/'))).toEqual(baseline.manifest.map((f) => f.path));
    expect(baseline.skipped).toBe(7);
    const app = byPath(baseline.manifest).get('src/app.ts')!;
    expect(app).toMatchObject({ size: 20, mode: MODE_FILE, note: null });
    expect(store.get(app.hash!)?.toString()).toBe('export const a = 1;\n');
  });

  it('keeps a symlink to /etc as a link to /etc, never what lies behind it, and an executable as such', async () => {
    symlinkSync('/etc', join(ws, 'etc-link'));
    write('run.sh', '#!/bin/sh\n');
    execFileSync('chmod', ['+x', join(ws, 'run.sh')]);
    const baseline = await scanWorkspace(ws, store);
    expect(baseline.manifest.map((f) => f.path)).toEqual(['etc-link', 'run.sh']);
    const link = byPath(baseline.manifest).get('etc-link')!;
    expect(link).toMatchObject({ mode: MODE_SYMLINK, size: 4, hash: contentHash(Buffer.from('/etc')) });
    expect(store.get(link.hash!)?.toString()).toBe('/etc');
    expect(byPath(baseline.manifest).get('run.sh')!.mode).toBe(MODE_EXECUTABLE);
  });

  it('names a file whose name holds a newline, and one whose name is not UTF-8, with a note', async () => {
    write('two\nlines.txt', 'odd name');
    writeFileSync(Buffer.concat([Buffer.from(`${ws}/`), Buffer.from([0x66, 0xff, 0x2e, 0x74])]), 'latin-1 name');
    const baseline = await scanWorkspace(ws, store);
    const files = byPath(baseline.manifest);
    expect(store.get(files.get('two\nlines.txt')!.hash!)?.toString()).toBe('odd name');
    const odd = baseline.manifest.find((f) => f.path !== 'two\nlines.txt')!;
    expect(odd).toMatchObject({ hash: null, note: 'its name is not valid UTF-8: not read' });
  });

  it('hashes a 1 GB file without keeping it or holding it in memory, and says why its content is not kept', async () => {
    execFileSync('truncate', ['-s', '1G', join(ws, 'disk.img')]);
    write('small.txt', 'small');
    const rss = process.memoryUsage().rss;
    const baseline = await scanWorkspace(ws, store);
    const big = byPath(baseline.manifest).get('disk.img')!;
    expect(big).toMatchObject({
      size: 1 << 30,
      hash: '49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14',
      note: '1,073,741,824 bytes, over the content cap: kept by hash only',
    });
    expect(store.has(big.hash!)).toBe(false);
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 << 20);
    expect(baseline.bytes).toBe((1 << 30) + 5);
  }, 180_000);

  it('keeps a file of exactly the cap and only hashes one a byte over it', async () => {
    write('at-cap.bin', Buffer.alloc(KEPT_CONTENT_MAX, 'a'));
    write('over-cap.bin', Buffer.alloc(KEPT_CONTENT_MAX + 1, 'a'));
    const files = byPath((await scanWorkspace(ws, store)).manifest);
    expect(store.has(files.get('at-cap.bin')!.hash!)).toBe(true);
    expect(store.has(files.get('over-cap.bin')!.hash!)).toBe(false);
  });

  it('records 100,000 files, deduplicating their contents, and reports progress', async () => {
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(ws, `d${d}`));
      for (let f = 0; f < 1000; f++) writeFileSync(join(ws, `d${d}`, `f${f}.txt`), `file ${f % 500}\n`);
    }
    const lines: string[] = [];
    const t0 = performance.now();
    const baseline = await scanWorkspace(ws, store, { onStatus: (line) => lines.push(line) });
    const seconds = (performance.now() - t0) / 1000;
    console.log(`baseline of 100,000 files: ${seconds.toFixed(1)} s`);
    expect(baseline.files).toBe(100_000);
    expect(store.totals().objects).toBe(500);
    expect(lines.at(-1)).toMatch(/^recording the workspace: [\d,]+ files…$/);
    expect(seconds).toBeLessThan(120);
  }, 600_000);

  it('writes its manifest and summary into a session.db once; a resume starts from the baseline and the recorded changes', async () => {
    write('a.txt', 'a');
    write('b.txt', 'b');
    write('c.txt', 'c');
    const dbPath = join(dir, 'session.db');
    const summary = await recordWorkspaceBaseline(dbPath, ws, store);
    expect(summary).toMatchObject({ files: 3, bytes: 3, skipped: 0 });
    await expect(recordWorkspaceBaseline(dbPath, ws, store)).rejects.toThrow(/has a workspace baseline already/);
    const db = new Database(dbPath);
    try {
      expect(readBaselineSummary(db)).toEqual(summary);
      expect(db.prepare('SELECT path, size, mode FROM workspace_files ORDER BY path').all()).toEqual([
        { path: 'a.txt', size: 1, mode: MODE_FILE },
        { path: 'b.txt', size: 1, mode: MODE_FILE },
        { path: 'c.txt', size: 1, mode: MODE_FILE },
      ]);
      const insert = db.prepare(
        "INSERT INTO fs_events (seq, event_id, timestamp, action, path, after_hash, after_mode) VALUES (?, ?, '2026-01-01T00:00:00Z', ?, ?, ?, ?)",
      );
      insert.run(1, '000000000001', 'modified', 'a.txt', contentHash(Buffer.from('a2')), MODE_FILE);
      insert.run(2, '000000000002', 'deleted', 'b.txt', null, null);
      insert.run(3, '000000000003', 'created', 'd.txt', contentHash(Buffer.from('d')), MODE_FILE);
      const versions = resumedVersions(db)!;
      expect(Object.fromEntries([...versions].map(([p, v]) => [p, v.hash]))).toEqual({
        'a.txt': contentHash(Buffer.from('a2')),
        'c.txt': contentHash(Buffer.from('c')),
        'd.txt': contentHash(Buffer.from('d')),
      });
    } finally {
      db.close();
    }
  });

  it('has no versions to resume from in a session without a baseline', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE session_meta (key TEXT PRIMARY KEY, value TEXT)');
    expect(resumedVersions(db)).toBeNull();
    db.close();
  });

  it('refuses a workspace that is not there, saying which', async () => {
    await expect(scanWorkspace(join(dir, 'gone'), store)).rejects.toThrow(/gone/);
  });
});
