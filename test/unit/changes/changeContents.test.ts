import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChangeContents } from '../../../electron/recording/changeContents.ts';
import { ContentStore, contentHash, KEPT_CONTENT_MAX } from '../../../electron/changes/contentStore.ts';
import { baselineVersions, scanWorkspace } from '../../../electron/changes/workspaceBaseline.ts';
import { MODE_FILE, MODE_SYMLINK } from '../../../electron/changes/workspaceEntry.ts';
import type { FsChange } from '../../../electron/recording/fsEventRows.ts';
import { GuestActivity } from '../../../electron/recording/guestActivity.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { liveSession, type LiveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// Every reported change keeps its content: the host reads the path the guest names, keeps what it
// holds, and the fs_events row names the content before and after. Driven through the real
// recorder and writer; the guest's reports are what the agent sends.

const home = tempHome();
let ws: string;
let store: ContentStore;
let session: LiveSession;
let activity: GuestActivity;
let said: string[];

beforeEach(async () => {
  ws = join(home.root, `ws-${Math.random().toString(36).slice(2)}`);
  mkdirSync(ws);
  store = ContentStore.open(home);
  session = await liveSession(home);
  said = [];
  activity = new GuestActivity(session.recorder, new ChangeContents(ws, store, (line) => said.push(line)));
});
afterEach(() => store.close());

const hash = (text: string | Buffer) => contentHash(typeof text === 'string' ? Buffer.from(text) : text);

function write(path: string, content: string | Buffer): void {
  mkdirSync(join(ws, path, '..'), { recursive: true });
  writeFileSync(join(ws, path), content);
}

/** Takes the baseline as a session start does and seeds the recorder with it. */
async function baseline(): Promise<void> {
  const taken = await scanWorkspace(ws, store);
  session.recorder.seedFileVersions(baselineVersions(taken.manifest));
}

const change = (action: FsChange['action'], path: string, is_dir = false): FsChange => ({
  action,
  path,
  size: null,
  is_dir,
  ts_ms: Date.now(),
});

interface Row {
  action: string;
  path: string;
  before_hash: string | null;
  after_hash: string | null;
  before_mode: number | null;
  after_mode: number | null;
}

/** Why the host kept no content of each change, as the rows say (once the session has ended: see rows). */
async function notes(): Promise<(string | null)[]> {
  const db = new Database(sessionPaths(home, session.id).dbPath, { readonly: true });
  try {
    return db.prepare('SELECT note FROM fs_events ORDER BY seq').pluck().all() as (string | null)[];
  } finally {
    db.close();
  }
}

async function rows(): Promise<Row[]> {
  await activity.settled();
  activity.endFsBatch();
  await activity.settled();
  await session.end();
  const db = new Database(sessionPaths(home, session.id).dbPath, { readonly: true });
  try {
    return db.prepare('SELECT action, path, before_hash, after_hash, before_mode, after_mode FROM fs_events ORDER BY seq').all() as Row[];
  } finally {
    db.close();
  }
}

describe('each change keeps its content', () => {
  it('names the baseline content before and the new content after, both kept in the store', async () => {
    write('src/app.ts', 'v1\n');
    await baseline();
    write('src/app.ts', 'v2\n');
    activity.fs([change('modified', 'src/app.ts')]);
    write('src/new.ts', 'new\n');
    activity.fs([change('created', 'src/new.ts')]);
    expect(await rows()).toEqual([
      {
        action: 'modified',
        path: 'src/app.ts',
        before_hash: hash('v1\n'),
        after_hash: hash('v2\n'),
        before_mode: MODE_FILE,
        after_mode: MODE_FILE,
      },
      { action: 'created', path: 'src/new.ts', before_hash: null, after_hash: hash('new\n'), before_mode: null, after_mode: MODE_FILE },
    ]);
    expect(store.get(hash('v1\n'))?.toString()).toBe('v1\n');
    expect(store.get(hash('v2\n'))?.toString()).toBe('v2\n');
  });

  it("reads an editor's save by rename as a modification of the file, with both versions", async () => {
    write('notes.md', 'old');
    await baseline();
    write('.notes.md.swp', 'new');
    renameSync(join(ws, '.notes.md.swp'), join(ws, 'notes.md'));
    activity.fs([change('created', '.notes.md.swp'), change('deleted', '.notes.md.swp'), change('created', 'notes.md')]);
    const written = await rows();
    expect(written.at(-1)).toMatchObject({ action: 'modified', path: 'notes.md', before_hash: hash('old'), after_hash: hash('new') });
  });

  it('keeps a row for each known file of a folder removed whole (rm -rf, or mv out of the workspace)', async () => {
    write('lib/a.ts', 'a');
    write('lib/deep/b.ts', 'b');
    write('keep.ts', 'k');
    await baseline();
    rmSync(join(ws, 'lib'), { recursive: true });
    activity.fs([change('deleted', 'lib', true)]);
    const written = await rows();
    expect(written.map((r) => [r.action, r.path, r.before_hash, r.after_hash])).toEqual([
      ['deleted', 'lib', null, null],
      ['deleted', 'lib/a.ts', hash('a'), null],
      ['deleted', 'lib/deep/b.ts', hash('b'), null],
    ]);
  });

  it('chains the versions of a file changed many times a second, each row before = the last row after', async () => {
    write('hot.txt', 'v0');
    await baseline();
    for (let i = 1; i <= 20; i++) {
      write('hot.txt', `v${i}`);
      activity.fs([change('modified', 'hot.txt')]);
    }
    const written = await rows();
    expect(written).toHaveLength(20);
    expect(written[0]!.before_hash).toBe(hash('v0'));
    for (let i = 1; i < written.length; i++) expect(written[i]!.before_hash).toBe(written[i - 1]!.after_hash);
    expect(written.at(-1)!.after_hash).toBe(hash('v20'));
  });

  it('keeps a symlink as its target, and reads nothing through a link out of the workspace', async () => {
    await baseline();
    symlinkSync('/etc', join(ws, 'etc'));
    activity.fs([change('created', 'etc'), change('created', 'etc/passwd')]);
    const written = await rows();
    expect(written).toEqual([
      { action: 'created', path: 'etc', before_hash: null, after_hash: hash('/etc'), before_mode: null, after_mode: MODE_SYMLINK },
      { action: 'created', path: 'etc/passwd', before_hash: null, after_hash: null, before_mode: null, after_mode: null },
    ]);
    expect(store.get(hash('/etc'))?.toString()).toBe('/etc');
    expect(await notes()).toEqual([null, 'not read: it lies through a symlink that leads out of the workspace']);
  });

  it('writes a row for hostile names (a newline, a name too long to join) without content where none can be read', async () => {
    await baseline();
    write('a\nb.txt', 'newline');
    const long = 'x'.repeat(5000);
    activity.fs([change('created', 'a\nb.txt'), change('created', long)]);
    const written = await rows();
    expect(written).toEqual([
      expect.objectContaining({ path: 'a\nb.txt', after_hash: hash('newline') }),
      expect.objectContaining({ path: long, after_hash: null }),
    ]);
    expect(await notes()).toEqual([null, 'not read: a workspace path of 5000 characters']);
  });

  it('keeps recording, without contents, when the workspace is deleted while the session runs, and says so once', async () => {
    write('a.txt', 'a');
    write('b.txt', 'b');
    await baseline();
    rmSync(ws, { recursive: true });
    activity.fs([change('modified', 'a.txt')]);
    activity.fs([change('deleted', 'b.txt')]);
    const written = await rows();
    expect(written.map((r) => [r.path, r.before_hash, r.after_hash])).toEqual([
      ['a.txt', hash('a'), null],
      ['b.txt', hash('b'), null],
    ]);
    expect(said).toEqual([`the workspace ${ws} is gone: its changes are still recorded, without their content`]);
  });

  it('reads a batch of 256 files of 2 MiB without holding the thread for long', async () => {
    await baseline();
    const changes: FsChange[] = [];
    for (let i = 0; i < 256; i++) {
      write(`big/${i}.bin`, randomBytes(KEPT_CONTENT_MAX));
      changes.push(change('created', `big/${i}.bin`));
    }
    let longest = 0;
    let last = performance.now();
    const tick = setInterval(() => {
      longest = Math.max(longest, performance.now() - last);
      last = performance.now();
    }, 5);
    const t0 = performance.now();
    activity.fs(changes);
    await activity.settled();
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(tick);
    console.log(`256 x 2 MiB (random): ${seconds.toFixed(1)} s, longest block of the event loop ${longest.toFixed(0)} ms`);
    const written = await rows();
    expect(written.filter((r) => r.after_hash !== null)).toHaveLength(256);
    expect(longest).toBeLessThan(1000);
  }, 300_000);

  it('records as before in a session without a baseline: no content', async () => {
    const plain = new GuestActivity(session.recorder);
    write('x.txt', 'x');
    plain.fs([change('created', 'x.txt')]);
    expect(await rows()).toEqual([
      { action: 'created', path: 'x.txt', before_hash: null, after_hash: null, before_mode: null, after_mode: null },
    ]);
  });
});
