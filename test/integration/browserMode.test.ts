import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempHome } from '../helpers/tempHome.ts';
import { ensureTestUser, httpGetAs } from '../helpers/unprivilegedUser.ts';

// The browser-mode process as `npm start -- --browser` runs it (scripts/start.mjs): one hostile
// request must cost only its own connection, never the app that serves every other one.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const home = tempHome();
let child: ChildProcess;
let port = 0;
let url = '';
let stderr = '';

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'electron/app/browserMain.ts', '--reason', 'test'], {
    cwd: ROOT,
    env: { ...process.env, CAPSEM_HOME: home.root, CAPSEM_UI_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`browser mode exited ${code}: ${stderr}`)));
  });
  const match = /^Capsem UI: http:\/\/127\.0\.0\.1:(\d+)\/\?token=/.exec(line);
  if (!match) throw new Error(`unexpected first line: ${line}`);
  port = Number(match[1]);
  url = line.slice('Capsem UI: '.length);
}, 60_000);

afterAll(async () => {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  home.remove();
});

/** Sends raw bytes and returns everything the server answered before it closed the connection (or went quiet for 5 s). */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(raw));
    socket.setTimeout(5000, () => socket.destroy());
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function alive(): boolean {
  return child.exitCode === null && child.signalCode === null;
}

describe('browser mode, one hostile request at a time', () => {
  it('answers a request target that is not a path with 400 and a plain reason, and keeps serving', async () => {
    const answer = await exchange(`GET http://a:99999/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer, stderr).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/content-type: text\/plain/i);
    expect(answer).toMatch(/\r\nrefused: the request target must be a path such as \/index.html\n/);
    expect(alive(), stderr).toBe(true);
  });

  it('answers the same target on a WebSocket upgrade with 400, and keeps serving', async () => {
    const answer = await exchange(
      [
        'GET http://a:99999/ws HTTP/1.1',
        `Host: 127.0.0.1:${port}`,
        `Origin: http://127.0.0.1:${port}`,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        '',
        '',
      ].join('\r\n'),
    );
    expect(answer, stderr).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/refused: the request target must be a path/);
    expect(alive(), stderr).toBe(true);
  });

  it('treats a path that looks like an address as a path', async () => {
    const answer = await exchange(`GET //a:99999/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer, stderr).toMatch(/^HTTP\/1\.1 404 /);
    expect(alive(), stderr).toBe(true);
  });

  it('still answers a normal request afterwards, from the same process', async () => {
    const answer = await exchange(`GET /mode.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer, stderr).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('{"kind":"browser","reason":"test"}');
  });
});

describe('browser mode, from another local account', () => {
  const user = ensureTestUser({ userNamespace: false });
  if (typeof user === 'string') console.warn(`skipping the other-account browser-mode test: ${user}`);
  const other = typeof user === 'string' ? null : user;

  it.runIf(other !== null)('refuses it with 403 even with the right token, and says so on stderr, while the owner is served', async () => {
    const theirs = await httpGetAs(other!, url);
    expect(theirs.status, JSON.stringify(theirs)).toBe(403);
    expect(JSON.parse(theirs.body!)).toEqual({
      error: `refused: this server answers only the user who owns CAPSEM_HOME (uid 0); this connection is from uid ${other!.uid}`,
    });
    expect(stderr).toContain(
      `capsem: browser mode refused: this server answers only the user who owns CAPSEM_HOME (uid 0); this connection is from uid ${other!.uid}\n`,
    );
    const ours = await exchange(`GET /mode.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(ours).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });
});
