import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { ContentStore } from '../../electron/changes/contentStore.ts';
import { contentHash } from '../../electron/changes/contentStore.ts';
import { MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK } from '../../electron/changes/workspaceEntry.ts';
import type { FileVersion } from '../../electron/changes/workspaceEntry.ts';
import type { LiveSession } from './sessionFixture.ts';

// A session's workspace folder as an agent changes it: each write made on disk, its content put in
// the content store, and the change recorded through the recording pipeline carrying that version,
// as the host records a guest's change. The baseline is written as workspace_files rows and handed
// to the recorder as the versions its files start at; `unkept` paths are named by hash alone.

export type FileSpec = string | Buffer | { readonly content: string | Buffer; readonly mode?: number } | { readonly link: string };

export class WorkspaceScene {
  constructor(
    readonly live: LiveSession,
    readonly store: ContentStore,
    readonly root: string,
  ) {
    mkdirSync(root, { recursive: true });
  }

  private put(path: string, spec: FileSpec, keep = true): FileVersion {
    const full = join(this.root, path);
    mkdirSync(dirname(full), { recursive: true });
    rmSync(full, { force: true });
    if (typeof spec === 'object' && 'link' in spec) {
      symlinkSync(spec.link, full);
      const bytes = Buffer.from(spec.link);
      if (keep) this.store.put(bytes);
      return { hash: contentHash(bytes), mode: MODE_SYMLINK };
    }
    const { content, mode } =
      typeof spec === 'string' || Buffer.isBuffer(spec) ? { content: spec, mode: MODE_FILE } : { mode: MODE_FILE, ...spec };
    const bytes = Buffer.from(content);
    writeFileSync(full, bytes);
    chmodSync(full, mode === MODE_EXECUTABLE ? 0o755 : 0o644);
    if (keep) this.store.put(bytes);
    return { hash: contentHash(bytes), mode };
  }

  /** The folder as the session found it; `unkept` paths are recorded by hash only (as a file over the cap is). */
  baseline(files: Record<string, FileSpec>, unkept: readonly string[] = []): void {
    const versions: [string, FileVersion][] = [];
    for (const [path, spec] of Object.entries(files)) {
      const version = this.put(path, spec, !unkept.includes(path));
      versions.push([path, version]);
      this.live.writer.append('workspace_files', { path, size: null, mode: version.mode, hash: version.hash, note: null });
    }
    this.live.recorder.seedFileVersions(versions);
  }

  /** A write the guest reports at `ts` (ms). */
  write(path: string, spec: FileSpec, ts: number, unkept = false): void {
    const existed = (() => {
      try {
        lstatSync(join(this.root, path));
        return true;
      } catch {
        return false;
      }
    })();
    const content = this.put(path, spec, !unkept);
    this.live.recorder.event('fs', {
      changes: [{ action: existed ? 'modified' : 'created', path, size: null, is_dir: false, ts_ms: ts, content }],
    });
  }

  remove(path: string, ts: number): void {
    rmSync(join(this.root, path));
    this.live.recorder.event('fs', { changes: [{ action: 'deleted', path, size: null, is_dir: false, ts_ms: ts }] });
  }

  /** A copy of the folder as it is now. */
  snapshot(to: string): string {
    cpSync(this.root, to, { recursive: true, verbatimSymlinks: true });
    return to;
  }
}

/** Every file and symlink under `root` with its bytes (a link's target) and mode: what "byte for byte" compares. */
export function treeOf(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string): void => {
    for (const name of readdirSync(dir)) {
      if (prefix === '' && name === '.git') continue;
      const full = join(dir, name);
      const rel = prefix + name;
      const stats = lstatSync(full);
      if (stats.isDirectory()) walk(full, `${rel}/`);
      else if (stats.isSymbolicLink()) out[rel] = `link:${readlinkSync(full)}`;
      else out[rel] = `${(stats.mode & 0o111) !== 0 ? 'x' : '-'}:${readFileSync(full).toString('base64')}`;
    }
  };
  walk(root, '');
  return out;
}

export const HOSTILE_NAME = 'src/new\nname "q" \\ é.ts';

/**
 * A Claude Code-like session over its own workspace folder: turn 0 edits src/app.ts with Edit and
 * README.md with a Bash sed; turn 1 writes a file with a hostile name, deletes notes/old.txt,
 * makes run.sh non-executable (Bash); turn 2 edits src/app.ts again and adds a symlink (Bash);
 * turn 3 answers; then the user, at the shell, adds user.txt. Snapshots of the folder before the
 * session, before turn 1 and at the end go under `snapshots`.
 */
export async function recordEditSession(
  live: LiveSession,
  store: ContentStore,
  root: string,
  snapshots: string,
  story: {
    call(step: {
      prompt?: string;
      results?: { callId: string; content: string }[];
      text?: string;
      tools?: { id: string; name: string; args: string }[];
    }): Promise<void>;
    readonly now: number;
    wait(ms: number): void;
  },
): Promise<{ baseline: string; beforeTurn1: string; final: string }> {
  const scene = new WorkspaceScene(live, store, root);
  scene.baseline({
    'src/app.ts': 'export const greet = () => "hello";\nexport const n = 1;\n',
    'README.md': 'hello world\nsecond line\n',
    'run.sh': { content: '#!/bin/sh\necho run\n', mode: MODE_EXECUTABLE },
    'notes/old.txt': 'old notes, no newline',
  });
  const baseline = scene.snapshot(join(snapshots, 'baseline'));
  const at = (): number => {
    story.wait(5);
    return story.now;
  };
  const edit = {
    id: 'toolu_edit',
    name: 'Edit',
    args: JSON.stringify({ file_path: '/workspace/src/app.ts', old_string: 'hello', new_string: 'hi' }),
  };
  const sed = { id: 'toolu_sed', name: 'Bash', args: JSON.stringify({ command: "sed -i 's/hello/bye/' README.md" }) };
  await story.call({ prompt: 'Tidy the project', text: 'Editing.', tools: [edit, sed] });
  scene.write('src/app.ts', 'export const greet = () => "hi";\nexport const n = 1;\n', at());
  scene.write('README.md', 'bye world\nsecond line\n', at());
  await live.recorder.settled();
  const beforeTurn1 = scene.snapshot(join(snapshots, 'before-turn-1'));
  const write = { id: 'toolu_write', name: 'Write', args: JSON.stringify({ file_path: HOSTILE_NAME, content: 'x' }) };
  const rm = { id: 'toolu_rm', name: 'Bash', args: JSON.stringify({ command: 'rm notes/old.txt; chmod -x run.sh' }) };
  await story.call({
    results: [
      { callId: edit.id, content: 'ok' },
      { callId: sed.id, content: '' },
    ],
    text: 'More.',
    tools: [write, rm],
  });
  scene.write(HOSTILE_NAME, 'export const odd = true;\n', at());
  scene.remove('notes/old.txt', at());
  scene.write('run.sh', '#!/bin/sh\necho run\n', at());
  const bash = { id: 'toolu_more', name: 'Bash', args: JSON.stringify({ command: 'npm run fix' }) };
  await story.call({
    results: [
      { callId: write.id, content: 'ok' },
      { callId: rm.id, content: '' },
    ],
    text: 'Last.',
    tools: [bash],
  });
  scene.write('src/app.ts', 'export const greet = () => "hi";\nexport const n = 2;\nexport const m = 3;', at());
  scene.write('link', { link: 'src/app.ts' }, at());
  await story.call({ results: [{ callId: bash.id, content: 'fixed' }], text: 'Done.' });
  story.wait(60_000);
  scene.write('user.txt', 'the user wrote this\n', story.now);
  await live.recorder.settled();
  await live.writer.flush();
  return { baseline, beforeTurn1, final: scene.snapshot(join(snapshots, 'final')) };
}
