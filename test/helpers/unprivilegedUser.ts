import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// An ordinary user for the tests that must not run as root (what the guest writes must be the
// user's): created once, with a range of subordinate ids, and kept, so every run finds it again.

export const TEST_USER = 'capsemws';

export interface TestUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

function run(command: string, args: readonly string[]): { ok: boolean; output: string } {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}`.trim() };
}

function hasRange(file: string): boolean {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .some((line) => line.startsWith(`${TEST_USER}:`));
  } catch {
    return false;
  }
}

/**
 * The test user, made if need be; or why it cannot be had or (unless `userNamespace` is false, for
 * a test that only runs a client as another account) cannot use a user namespace here.
 */
export function ensureTestUser({ userNamespace = true } = {}): TestUser | string {
  if (process.getuid?.() !== 0) return 'making an unprivileged test user needs root';
  if (userNamespace && !run('sh', ['-c', 'command -v newuidmap']).ok) return 'newuidmap is not installed (apt-get install -y uidmap)';
  if (!run('getent', ['passwd', TEST_USER]).ok) {
    const made = run('useradd', ['--create-home', '--shell', '/bin/sh', TEST_USER]);
    if (!made.ok) return `useradd ${TEST_USER} failed: ${made.output}`;
  }
  if (!hasRange('/etc/subuid') || !hasRange('/etc/subgid')) {
    const added = run('usermod', ['--add-subuids', '300000000-300065535', '--add-subgids', '300000000-300065535', TEST_USER]);
    if (!added.ok) return `usermod --add-subuids for ${TEST_USER} failed: ${added.output}`;
  }
  const [, , uid, gid, , home] = run('getent', ['passwd', TEST_USER]).output.split(':');
  const user = { name: TEST_USER, uid: Number(uid), gid: Number(gid), home: home ?? '' };
  if (!userNamespace) return user;
  const userns = run('setpriv', [...asUser(user), '--', 'unshare', '--map-root-user', '--map-auto', '--mount', 'true']);
  if (!userns.ok) return `user namespaces are not available to ${TEST_USER}: ${userns.output}`;
  return user;
}

/** setpriv's arguments that run a command as `user`, with its groups. */
export function asUser(user: TestUser): string[] {
  return [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups'];
}

export interface HttpAnswer {
  readonly status?: number;
  readonly body?: string;
  /** The client's error code, where it got no answer. */
  readonly error?: string;
}

/** A GET made by a Node client running as `user` (another local account): what it read, or the error it got. */
export function httpGetAs(user: TestUser, url: string): Promise<HttpAnswer> {
  const client = `require('node:http').get(process.argv[1], (res) => {
    let body = '';
    res.on('data', (c) => (body += c));
    res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, body })));
  }).on('error', (e) => process.stdout.write(JSON.stringify({ error: e.code ?? e.message })));`;
  return new Promise((resolve, reject) => {
    const child = spawn('setpriv', [...asUser(user), '--', process.execPath, '-e', client, url], { cwd: user.home });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(JSON.parse(out || '{"error":"the client printed nothing"}') as HttpAnswer));
  });
}
