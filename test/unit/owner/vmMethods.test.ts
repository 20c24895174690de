import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandOutput } from '../../../electron/cli/commandOutput.ts';
import { vmEventPrinter } from '../../../electron/cli/vmOwner.ts';
import { ControlClient } from '../../../electron/owner/controlClient.ts';
import { startControlServer, type ControlServer } from '../../../electron/owner/controlSocket.ts';
import { vmHostMethods } from '../../../electron/owner/vmHostMethods.ts';
import type { JsonValue } from '../../../electron/owner/wire.ts';
import { ensurePrivateDir } from '../../../electron/store/paths.ts';
import { VmHost } from '../../../electron/vm/vmHost.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// Both ends of the owner socket's vm.* methods parse what the other sent with one schema module
// (owner/vmMethods.ts): a malformed message is refused with a reason, never cast and acted on.

const home = tempHome();
let server: ControlServer;
let client: ControlClient;

beforeAll(async () => {
  ensurePrivateDir(home.runDir);
  const host = new VmHost({
    home,
    backend: () => {
      throw new Error('no VM boots in this test: every call here must be refused first');
    },
  });
  const info = { pid: process.pid, kind: 'cli', command: 'test', startedAt: new Date(0).toISOString(), version: '0.0.0' } as const;
  server = await startControlServer({ path: join(home.runDir, 'control.sock'), info, methods: vmHostMethods(host) });
  client = await ControlClient.connect(server.path);
});

afterAll(async () => {
  client.close();
  await server.close();
  home.remove();
});

describe('the owner refuses malformed vm.* params', () => {
  it.each([
    ['vm.stop', { id: 'co-work1' }, /a session id \(a UUID\), not a display name.*at id/],
    ['vm.run', { image: 'minimal', argv: [] }, /at argv/],
    ['vm.run', { image: 'windows', argv: ['true'] }, /at image/],
    ['vm.shell', { workspace: 'relative/folder' }, /an absolute path.*at workspace/],
    ['vm.shell', { id: '../../etc', resume: true }, /a session id.*at id/],
    ['vm.shell', { agent: { name: 'cursor' } }, /at agent\.name/],
    ['vm.shell', { agent: { name: 'claude', credentials: { LD_PRELOAD: '/tmp/x.so' } } }, /at agent\.credentials/],
  ] as const)('%s %j', async (method, params, reason) => {
    await expect(client.call(method, params as unknown as JsonValue)).rejects.toMatchObject({
      code: 'invalid_params',
      message: expect.stringMatching(reason),
    });
  });
});

describe('the owner answers a start it refuses with the code the client branches on', () => {
  const absent = '0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f';
  it.each([
    ['vm.stop', { id: absent }, 'not_running'],
    ['vm.shell', { id: absent }, 'not_running'],
    ['vm.shell', { id: absent, resume: true }, 'unknown_session'],
    ['vm.shell', { image: 'minimal', agent: { name: 'claude' } }, 'bad_params'],
    ['vm.shell', { agent: { name: 'claude' } }, 'missing_key'],
  ] as const)('%s %j', async (method, params, code) => {
    await expect(client.call(method, params as unknown as JsonValue)).rejects.toMatchObject({ code });
  });
});

describe('the CLI refuses malformed vm stream events from the owner', () => {
  function printer() {
    const said: string[] = [];
    const stderr = new PassThrough();
    const written: Buffer[] = [];
    stderr.on('data', (b: Buffer) => written.push(b));
    const ctx = { home, out: () => {}, err: (text: string) => void said.push(text) };
    return { said, written, print: vmEventPrinter(ctx, commandOutput(new PassThrough(), stderr), new PassThrough()) };
  }

  it('prints a well-formed event', () => {
    const { said, print } = printer();
    void print({ type: 'session', id: '0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f', name: 'co-work1' });
    expect(said).toEqual(['capsem: session 0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f (co-work1)']);
  });

  it.each([
    [{ type: 'stderr', data: 42 }, /data/],
    [{ type: 'stderr', data: 'not base64!' }, /data/],
    [{ type: 'progress', stage: 'kernel' }, /message|fraction/],
    [{ type: 'reboot' }, /type/],
    ['status', /object/],
  ] as const)('%j', (raw, reason) => {
    const { said, written, print } = printer();
    void print(raw as unknown as JsonValue);
    expect(said).toEqual([expect.stringMatching(/^capsem: ignored an event from the owner that is not a VM stream event: /)]);
    expect(said[0]).toMatch(reason);
    expect(written).toEqual([]);
  });
});
