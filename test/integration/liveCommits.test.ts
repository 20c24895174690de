import { get, type IncomingMessage } from 'node:http';
import { afterAll, expect, it } from 'vitest';
import { startApiServer } from '../../electron/api/server.ts';
import { AppCore } from '../../electron/app/appCore.ts';
import type { EventName, EventPayload } from '../../electron/contract/appContract.ts';
import type { SessionEvent } from '../../electron/contract/sessionEvent.ts';
import { finalSeqOf } from '../../electron/sessions/eventSeq.ts';
import { liveSession, recordFileChange } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The window and the SSE tail hear of a row committed by a writer in their own process from the
// commit itself, not from a poll: with the poll round set to days, the news still comes.

const home = tempHome();
const core = new AppCore({ home, liveIntervalMs: 2 ** 30 });
afterAll(() => {
  core.close();
  home.remove();
});

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

it('sends session.events for an in-process commit without a poll round', async () => {
  const live = await liveSession(home, 'prompt');
  const events: EventPayload<'session.events'>[] = [];
  const off = core.subscribe(<N extends EventName>(name: N, payload: EventPayload<N>) => {
    if (name === 'session.events') events.push(payload as EventPayload<'session.events'>);
  });
  await core.handle('live.subscribe', { id: live.id });
  recordFileChange(live, 'a.txt', { size: 1 });
  await live.writer.flush();
  await nextTurn();
  expect(events).toEqual([{ id: live.id, kinds: ['file'], lastSeq: 1 }]);
  recordFileChange(live, 'a.txt', { action: 'modified', size: 2 });
  await live.writer.flush();
  await nextTurn();
  expect(events.at(-1)).toEqual({ id: live.id, kinds: ['file'], lastSeq: 2 });
  off();
  await live.end();
});

it('streams an in-process commit on GET /v1/events without a poll round', async () => {
  const api = await startApiServer({ home, port: 0, pollMs: 2 ** 30 });
  // The hub subscribes before it sends the headers, so once they are here no event can be missed.
  const res = await new Promise<IncomingMessage>((resolve, reject) => get(new URL('/v1/events', api.url), resolve).on('error', reject));
  res.setEncoding('utf8');
  const first = new Promise<SessionEvent>((resolve) => {
    let buffered = '';
    res.on('data', (chunk: string) => {
      buffered += chunk;
      const data = /data: (.*)\n/.exec(buffered);
      if (data) resolve(JSON.parse(data[1]!) as SessionEvent);
    });
  });
  const live = await liveSession(home, 'tailed');
  recordFileChange(live, 'b.txt', { size: 1 });
  await live.writer.flush();
  expect(await first).toMatchObject({ sessionId: live.id, seq: finalSeqOf(1) });
  res.destroy();
  await live.end();
  await api.close();
});
