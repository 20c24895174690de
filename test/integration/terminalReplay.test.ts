import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { CallName, CallParams, CallResult } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { PtyTranscript, REPLAY_CHUNK_BYTES } from '../../electron/vm/ptyTranscript.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Replaying an ended session's terminal through the host core, as the window does: a 48 MiB
// recording comes back a chunk at a time, each asked for after the last, never in one answer.

const home = tempHome();
let core: AppCore;
let id: SessionId;
const OUTPUTS = 12_000;
const output = (i: number): string => `${String(i).padStart(6, '0')} ${'x'.repeat(4000)}\r\n`;
/** A recorded line is one output event: its data JSON-escaped, plus the time and code. */
const LONGEST_LINE = 4200;

function call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
  return core.handle(name, params) as Promise<CallResult<N>>;
}

beforeAll(async () => {
  const [record] = await seedSessions(home, { sessions: 1, events: 20, seed: 3, crashedIndex: -1 });
  id = record!.id as SessionId;
  const transcript = new PtyTranscript(sessionPaths(home, id).ptyLogPath, { cols: 120, rows: 40 }, 'xterm-256color');
  for (let i = 0; i < OUTPUTS; i++) transcript.output(Buffer.from(output(i)));
  transcript.close();
  core = new AppCore({ home, checkResults: true });
}, 60_000);

afterAll(() => {
  core.close();
  home.remove();
});

describe('replaying a large recorded terminal', () => {
  it('answers attach with the first chunk only, and gives the rest a bounded chunk per call, in order', async () => {
    const size = statSync(sessionPaths(home, id).ptyLogPath).size;
    expect(size).toBeGreaterThan(40 * REPLAY_CHUNK_BYTES);

    const attached = await call('terminal.attach', { id, size: { cols: 80, rows: 24 } });
    expect(attached.live).toBe(false);
    const first = attached.transcript!;
    expect({ width: first.width, height: first.height }).toEqual({ width: 120, height: 40 });
    expect(first.events.length).toBeGreaterThan(0);
    expect(first.events.length).toBeLessThan(OUTPUTS / 40);
    expect(first.next).not.toBeNull();
    expect(first.next!).toBeLessThanOrEqual(REPLAY_CHUNK_BYTES + LONGEST_LINE + 200);

    const data = first.events.map((e) => e[2]);
    let from = first.next;
    let chunks = 1;
    while (from !== null) {
      const part = await call('terminal.replay', { id, from });
      if (part.next !== null) expect(part.next - from).toBeLessThanOrEqual(REPLAY_CHUNK_BYTES + LONGEST_LINE);
      data.push(...part.events.map((e) => e[2]));
      from = part.next;
      chunks += 1;
    }
    expect(chunks).toBeGreaterThanOrEqual(Math.floor(size / (REPLAY_CHUNK_BYTES + LONGEST_LINE)));
    expect(data.length).toBe(OUTPUTS);
    expect(data.every((d, i) => d === output(i))).toBe(true);
  });

  it('refuses a replay for a session it does not know', async () => {
    await expect(call('terminal.replay', { id: '00000000-0000-4000-8000-000000000000', from: 0 })).rejects.toMatchObject({
      code: 'unknown_session',
    });
  });
});
