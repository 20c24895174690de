import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { CapsemApi, CapsemFiles } from '../../../electron/contract/appContract.ts';

// The preload runs against a stand-in for Electron's renderer modules (the real ones need the
// Electron runtime): what it exposes, what it sends on which channel, how answers come back.
const bridge = vi.hoisted(() => {
  const exposed = new Map<string, unknown>();
  const handlers = new Map<string, ((event: unknown, message: unknown) => void)[]>();
  const invoke = vi.fn<(channel: string, payload: unknown) => Promise<unknown>>();
  const getPathForFile = vi.fn<(file: unknown) => string>();
  return {
    exposed,
    invoke,
    getPathForFile,
    emit(channel: string, message: unknown): void {
      for (const h of handlers.get(channel) ?? []) h({}, message);
    },
    electron: {
      contextBridge: { exposeInMainWorld: (key: string, value: unknown) => exposed.set(key, value) },
      webUtils: { getPathForFile },
      ipcRenderer: {
        invoke,
        on: (channel: string, handler: (event: unknown, message: unknown) => void) =>
          handlers.set(channel, [...(handlers.get(channel) ?? []), handler]),
      },
    },
  };
});
vi.mock('electron', () => bridge.electron);

let capsem: CapsemApi;
let capsemFiles: CapsemFiles;
beforeAll(async () => {
  // An open request that arrives before the page subscribes is held, not lost.
  await import('../../../electron/shell/preload.ts');
  bridge.emit('capsem:event', { name: 'app.open', payload: { query: 'early' } });
  capsem = bridge.exposed.get('capsem') as CapsemApi;
  capsemFiles = bridge.exposed.get('capsemFiles') as CapsemFiles;
});

describe('preload', () => {
  it('exposes window.capsem and window.capsemFiles and nothing else', () => {
    expect([...bridge.exposed.keys()]).toEqual(['capsem', 'capsemFiles']);
    expect(Object.keys(capsem).sort()).toEqual(['call', 'mode', 'on']);
    expect(capsem.mode).toEqual({ kind: 'electron' });
    expect(Object.keys(capsemFiles)).toEqual(['pathFor', 'pickFolder']);
  });

  it('gives a file its path through webUtils, and "" when it has none', () => {
    const file = new File(['x'], 'a.capsem');
    bridge.getPathForFile.mockReturnValueOnce('/home/me/a.capsem');
    expect(capsemFiles.pathFor(file)).toBe('/home/me/a.capsem');
    expect(bridge.getPathForFile).toHaveBeenLastCalledWith(file);
    bridge.getPathForFile.mockImplementationOnce(() => {
      throw new TypeError('not a File');
    });
    expect(capsemFiles.pathFor(file)).toBe('');
  });

  it('asks the main process for a folder over capsem:pick-folder, and takes anything but a path as cancelled', async () => {
    bridge.invoke.mockResolvedValueOnce('/home/me/code/app');
    expect(await capsemFiles.pickFolder()).toBe('/home/me/code/app');
    expect(bridge.invoke).toHaveBeenLastCalledWith('capsem:pick-folder');
    for (const answer of [null, '', 42, { path: '/x' }]) {
      bridge.invoke.mockResolvedValueOnce(answer);
      expect(await capsemFiles.pickFolder()).toBeNull();
    }
  });

  it('calls over capsem:call with { name, params } and returns the result', async () => {
    bridge.invoke.mockResolvedValueOnce({ ok: true, result: [] });
    await expect(capsem.call('sessions.list', {})).resolves.toEqual([]);
    expect(bridge.invoke).toHaveBeenLastCalledWith('capsem:call', { name: 'sessions.list', params: {} });
  });

  it('rejects with a plain CallError object (contextBridge would strip an Error of its code)', async () => {
    const candidates = [{ id: 'a', name: 'co-work1' }];
    bridge.invoke.mockResolvedValueOnce({ ok: false, error: { code: 'ambiguous_name', message: 'two', candidates } });
    await expect(capsem.call('sessions.resolve', { query: 'co' })).rejects.toEqual({
      name: 'CallError',
      code: 'ambiguous_name',
      message: 'two',
      candidates,
    });
    bridge.invoke.mockResolvedValueOnce('garbage');
    await expect(capsem.call('sessions.list', {})).rejects.toMatchObject({ code: 'bad_answer' });
  });

  it('delivers events by name until unsubscribed', () => {
    const outputs: unknown[] = [];
    const exits: unknown[] = [];
    const off = capsem.on('terminal.output', (p) => outputs.push(p));
    capsem.on('terminal.exit', (p) => exits.push(p));
    bridge.emit('capsem:event', { name: 'terminal.output', payload: { id: 'a', data: 'hi' } });
    bridge.emit('capsem:event', { name: 'terminal.exit', payload: { id: 'a', code: 0 } });
    bridge.emit('capsem:event', 'not a message');
    off();
    bridge.emit('capsem:event', { name: 'terminal.output', payload: { id: 'a', data: 'late' } });
    expect(outputs).toEqual([{ id: 'a', data: 'hi' }]);
    expect(exits).toEqual([{ id: 'a', code: 0 }]);
  });

  it('keeps delivering when one listener throws', () => {
    const seen: unknown[] = [];
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    capsem.on('session.events', () => {
      throw new Error('bad listener');
    });
    capsem.on('session.events', (p) => seen.push(p));
    bridge.emit('capsem:event', { name: 'session.events', payload: { id: 'a', kinds: ['net'], lastSeq: 3 } });
    expect(seen).toHaveLength(1);
    expect(quiet).toHaveBeenCalled();
    quiet.mockRestore();
  });

  it('hands held open requests to the first app.open listener, then live ones', () => {
    const opens: unknown[] = [];
    capsem.on('app.open', (p) => opens.push(p));
    bridge.emit('capsem:event', { name: 'app.open', payload: { query: 'later' } });
    expect(opens).toEqual([{ query: 'early' }, { query: 'later' }]);
  });
});
