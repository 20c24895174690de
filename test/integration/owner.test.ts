import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { ControlClient } from '../../electron/owner/controlClient.ts';
import { readOwnerLock } from '../../electron/owner/ownerLock.ts';
import { becomeOwner } from '../../electron/owner/ownership.ts';
import { runCapsem, runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { spawnOwnerChild } from '../helpers/spawnOwnerChild.ts';
import { tempHome } from '../helpers/tempHome.ts';

const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
const home = tempHome();
afterAll(() => home.remove());

describe('capsem owner', () => {
  it('says no owner runs in a fresh home, as text and JSON, and has --help', () => {
    const text = runCapsem(home.root, ['owner']);
    expect(text).toMatchObject({ code: 0, stdout: 'no owner running\n', stderr: '' });
    expect(JSON.parse(runCapsem(home.root, ['owner', '--json']).stdout)).toEqual({ owner: null, socket: `${home.root}/run/control.sock` });
    expect(runCapsem(home.root, ['owner', '--help']).stdout).toMatch(/^capsem owner/);
    const extra = runCapsem(home.root, ['owner', 'now']);
    expect(extra.code).toBe(2);
    expect(extra.stderr.trim()).toBe('capsem: owner takes no arguments (see capsem owner --help)');
  });

  it('names a running owner, and `capsem record` then records as its client without taking the lock', async () => {
    const owner = await becomeOwner(home, { kind: 'app', command: 'Capsem Desktop' });
    if ('holder' in owner) throw new Error('home already owned');
    try {
      const status = await runCapsemAsync(home.root, ['owner']);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(
        new RegExp(`^owner: +pid ${process.pid} \\(app\\)\ncommand: Capsem Desktop\nsince: +${owner.info.startedAt}\nversion: 0\\.1\\.0\n`),
      );

      const recorded = await runCapsemAsync(home.root, [
        'record',
        '--name',
        'beside-app',
        '--',
        process.execPath,
        '-e',
        'console.log("ran here")',
      ]);
      expect(recorded.code, recorded.stderr).toBe(0);
      expect(recorded.stdout).toBe('ran here\n');
      expect(recorded.stderr).not.toMatch(/took over|owner/);
      expect(readOwnerLock(home)?.record?.token).toBe(owner.lock.record.token);
    } finally {
      await owner.close();
    }
    const [session] = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout);
    expect(session).toMatchObject({ name: 'beside-app', status: 'stopped' });
  });

  it('makes `capsem record` the owner for its duration when nobody else is', async () => {
    // The recorded program asks who owns the home: the record process itself.
    const recorded = await runCapsemAsync(home.root, ['record', '--', process.execPath, BIN, 'owner', '--json']);
    expect(recorded.code, recorded.stderr).toBe(0);
    const { owner } = JSON.parse(recorded.stdout);
    expect(owner).toMatchObject({ kind: 'cli', command: `capsem record -- ${process.execPath} ${BIN} owner --json`, version: '0.1.0' });
    expect(owner.pid).not.toBe(process.pid);
    expect(runCapsem(home.root, ['owner']).stdout).toBe('no owner running\n');
  });

  it('takes over from a killed owner and says so', async () => {
    const dead = spawnOwnerChild(home.root, 'lock');
    await dead.firstLine;
    dead.process.kill('SIGKILL');
    await dead.done;
    expect(runCapsem(home.root, ['owner']).stdout).toBe('no owner running\n');
    const recorded = await runCapsemAsync(home.root, ['record', '--', process.execPath, '-e', '0']);
    expect(recorded.code).toBe(0);
    expect(recorded.stderr).toMatch(
      new RegExp(`^capsem: took over ${home.root} from pid ${dead.process.pid} \\(ownerChild lock\\), which is no longer running$`, 'm'),
    );
  });

  it('refuses a line nested 100,000 deep without recursing, and the owner and the connection survive it', async () => {
    // A recorded program that says it runs (so the owner's socket is up) and ends when its stdin does.
    const owner = spawn(
      process.execPath,
      [BIN, 'record', '--', process.execPath, '-e', 'console.log("ready"); process.stdin.resume().on("end", () => process.exit(0))'],
      {
        cwd: USER_FOLDER,
        env: { ...process.env, CAPSEM_HOME: home.root },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    owner.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => owner.on('exit', resolve));
    // Ending its stdin ends the recorded program, and with it the owner, however this test ends.
    onTestFinished(() => void owner.stdin!.end());
    await new Promise<void>((resolve, reject) => {
      owner.stdout!.on('data', (c: Buffer) => c.toString().includes('ready') && resolve());
      void exited.then((code) => reject(new Error(`capsem record exited ${code}: ${stderr}`)));
    });

    const deep = 100_000;
    const conn = connect(`${home.root}/run/control.sock`);
    const lines: unknown[] = [];
    let buffer = '';
    conn.on('data', (c: Buffer) => {
      buffer += c.toString();
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    });
    conn.on('error', (err) => lines.push({ connection: err.message }));
    conn.write(`{"id":1,"method":"owner.info","params":${'['.repeat(deep)}${']'.repeat(deep)}}\n`);
    conn.write(`${'{"a":'.repeat(deep)}1${'}'.repeat(deep)}\n`);
    conn.write('{"id":2,"method":"owner.info"}\n');
    const refusal = { id: null, error: { code: 'bad_message', message: 'nested deeper than 64 levels' } };
    const answered = { id: 2, result: expect.objectContaining({ pid: owner.pid, kind: 'cli' }) };
    await expect.poll(() => lines, { timeout: 10_000 }).toEqual([refusal, refusal, answered]);
    conn.destroy();

    const fresh = await ControlClient.connect(`${home.root}/run/control.sock`);
    expect(await fresh.call('owner.info')).toMatchObject({ pid: owner.pid, kind: 'cli' });
    fresh.close();
    owner.stdin!.end();
    expect(await exited, stderr).toBe(0);
  });

  it('reports a live lock holder that does not answer as an error', async () => {
    const stuck = spawnOwnerChild(home.root, 'lock');
    await stuck.firstLine;
    const status = runCapsem(home.root, ['owner']);
    stuck.process.kill('SIGKILL');
    await stuck.done;
    expect(status.code).toBe(1);
    expect(status.stdout).toBe('');
    expect(status.stderr.trim()).toBe(
      `capsem: pid ${stuck.process.pid} (ownerChild lock) holds the owner lock but does not answer on ${home.root}/run/control.sock`,
    );
  });
});
