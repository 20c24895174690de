import { describe, expect, it } from 'vitest';
import type { EventName, EventPayload, HostCore } from '../../../electron/contract/appContract.ts';
import { CallFailure } from '../../../electron/app/callFailure.ts';
import { answerCall, isTrustedSender, toCallError, type SenderFacts } from '../../../electron/shell/ipcBridge.ts';
import { isCallAnswer, isEventMessage } from '../../../electron/shell/ipcChannels.ts';

const ours: SenderFacts = { senderWebContentsId: 7, windowWebContentsId: 7, frameUrl: 'capsem://app/index.html', isMainFrame: true };

describe('isTrustedSender', () => {
  it('trusts the main frame of our window on our origin', () => {
    expect(isTrustedSender(ours)).toBe(true);
  });

  it.each<[string, Partial<SenderFacts>]>([
    ['another webContents', { senderWebContentsId: 8 }],
    ['no window yet (or closed)', { windowWebContentsId: null }],
    ['a subframe', { isMainFrame: false }],
    ['a frame that is gone', { frameUrl: null }],
    ['a page that got to https', { frameUrl: 'https://evil.example/' }],
    ['file://', { frameUrl: 'file:///opt/capsem/dist/renderer/index.html' }],
    ['a session link host', { frameUrl: 'capsem://session/x' }],
    ['a look-alike host', { frameUrl: 'capsem://app.evil/index.html' }],
    ['about:blank', { frameUrl: 'about:blank' }],
    ['data:', { frameUrl: 'data:text/html,hi' }],
  ])('refuses %s', (_label, change) => {
    expect(isTrustedSender({ ...ours, ...change })).toBe(false);
  });
});

class FakeCore implements HostCore {
  readonly seen: [string, unknown][] = [];
  constructor(private readonly answer: (name: string, params: unknown) => Promise<unknown>) {}
  handle(name: string, params: unknown): Promise<unknown> {
    this.seen.push([name, params]);
    return this.answer(name, params);
  }
  subscribe(_listener: <N extends EventName>(name: N, payload: EventPayload<N>) => void): () => void {
    return () => undefined;
  }
}

describe('answerCall', () => {
  it('forwards a contract call and returns its result', async () => {
    const core = new FakeCore(async () => [{ id: 'x' }]);
    expect(await answerCall(core, { name: 'sessions.list', params: {} })).toEqual({ ok: true, result: [{ id: 'x' }] });
    expect(core.seen).toEqual([['sessions.list', {}]]);
  });

  it('waits for a core that is still starting', async () => {
    const core = new FakeCore(async () => ({ id: 'y' }));
    expect(await answerCall(Promise.resolve(core), { name: 'sessions.resolve', params: { query: 'co-work1' } })).toEqual({
      ok: true,
      result: { id: 'y' },
    });
  });

  it.each([
    [null],
    ['sessions.list'],
    [{ name: 'sessions.list' }],
    [{ name: '', params: {} }],
    [{ name: 'sessions.list', params: {}, extra: true }],
    [{ name: 'x'.repeat(101), params: {} }],
  ])('refuses a malformed envelope without calling the core: %j', async (raw) => {
    const core = new FakeCore(async () => 'nope');
    expect(await answerCall(core, raw)).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(core.seen).toEqual([]);
  });

  it.each(['constructor', '__proto__', 'toString', 'sessions.erase', 'shell.openExternal'])(
    'refuses %s, which is not in CALLS',
    async (name) => {
      const core = new FakeCore(async () => 'nope');
      expect(await answerCall(core, { name, params: {} })).toMatchObject({ ok: false, error: { code: 'unknown_call' } });
      expect(core.seen).toEqual([]);
    },
  );

  it("carries the core's error code and candidates, and nothing else", async () => {
    const candidates = [{ id: '3f2a9c1e-0000-4000-8000-00000000abcd', name: 'co-work1' }];
    const core = new FakeCore(async () => {
      throw Object.assign(new CallFailure('ambiguous_name', 'co-work matches 1 session', candidates), { hostPath: '/home/u/.capsem' });
    });
    const answer = await answerCall(core, { name: 'sessions.resolve', params: { query: 'co-work' } });
    expect(answer).toEqual({ ok: false, error: { code: 'ambiguous_name', message: 'co-work matches 1 session', candidates } });
  });

  it('reports a core that failed to start', async () => {
    expect(await answerCall(Promise.reject(new Error('CAPSEM_HOME is owned by pid 42')), { name: 'sessions.list', params: {} })).toEqual({
      ok: false,
      error: { code: 'internal', message: 'CAPSEM_HOME is owned by pid 42' },
    });
  });
});

describe('toCallError', () => {
  it('takes a CallError from the error, from error.callError, or makes one', () => {
    expect(toCallError(new CallFailure('bad_params', 'no'))).toEqual({ code: 'bad_params', message: 'no' });
    expect(toCallError({ callError: { code: 'x', message: 'y' } })).toEqual({ code: 'x', message: 'y' });
    expect(toCallError(new TypeError('boom'))).toEqual({ code: 'internal', message: 'boom' });
    expect(toCallError('text')).toEqual({ code: 'internal', message: 'text' });
    expect(toCallError(undefined)).toEqual({ code: 'internal', message: 'undefined' });
  });
});

describe('channel shapes', () => {
  it('recognises answers and event messages', () => {
    expect(isCallAnswer({ ok: true, result: null })).toBe(true);
    expect(isCallAnswer({ ok: false, error: { code: 'a', message: 'b' } })).toBe(true);
    expect(isCallAnswer({ ok: true })).toBe(false);
    expect(isCallAnswer({ ok: false, error: { code: 1, message: 'b' } })).toBe(false);
    expect(isCallAnswer('ok')).toBe(false);
    expect(isEventMessage({ name: 'terminal.output', payload: { id: 'x', data: '' } })).toBe(true);
    expect(isEventMessage({ name: 3, payload: {} })).toBe(false);
    expect(isEventMessage({ name: 'x' })).toBe(false);
  });
});
