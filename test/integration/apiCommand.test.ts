import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { call } from '../helpers/apiClient.ts';
import { runCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());
const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));

it('capsem api prints its address once it listens, serves the store, and stops on SIGTERM', async () => {
  runCapsem(home.root, ['dev', 'seed', '--sessions', '1', '--events', '30']);
  const child = spawn(process.execPath, [BIN, 'api', '--port', '0'], { cwd: USER_FOLDER, env: { ...process.env, CAPSEM_HOME: home.root }, stdio: ['ignore', 'pipe', 'pipe'] });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  expect(line).toMatch(/^Capsem API: http:\/\/127\.0\.0\.1:\d+$/);
  const url = line.slice('Capsem API: '.length);
  const { sessions } = (await call(url, '/v1/sessions')).json<{ sessions: { name: string }[] }>();
  expect(sessions.map((s) => s.name)).toEqual(['co-work1']);
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code).toBe(0);
});

it('says plainly when the port is taken', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const result = runCapsem(home.root, ['api', '--port', String(port)]);
  blocker.close();
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toBe(`capsem: port ${port} is already in use; pick another with --port`);
});
