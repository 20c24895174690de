import { afterAll, describe, expect, it } from 'vitest';
import { ClaudeCodeConversation } from '../../../electron/dev/claudeCodeWire.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { decode, sessionEvent } from '../../helpers/cortexClient.ts';
import { claudeCodeExchange, httpsExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// Claude Code names the subagent that sent a request, and the subagent that started it, in two
// request headers. The agent-story step keeps them, when usable, on the exchange's row, and the
// API shows them on the exchange's events as subagent and parentSubagent.

const home = tempHome();
afterAll(() => home.remove());

const X = 'a1bf9707ee0e71012';
const Y = 'a0c4de12f8a9b3e57';

describe("Claude Code's agent-id headers", () => {
  it('are on every event of the exchanges a subagent sent, model calls and other requests alike, and on no other', async () => {
    const live = await liveSession(home);
    const sent = new Date('2026-11-29T10:00:00Z');
    void live.recorder.record(claudeCodeExchange(new ClaudeCodeConversation().say('Audit').call(), sent));
    void live.recorder.record(claudeCodeExchange(new ClaudeCodeConversation({ id: Y, parent: X }).say('Read the tests').call(), sent));
    void live.recorder.record(
      httpsExchange('docs.python.org', '/3/', {
        requestHeaders: { host: 'docs.python.org', 'x-claude-code-agent-id': X, 'user-agent': 'claude-cli/2.1.332 (external, cli)' },
      }),
    );
    void live.recorder.record(
      claudeCodeExchange(new ClaudeCodeConversation({ id: `${X}\r\nx-evil: 1`, parent: 'p'.repeat(129) }).say('Sneak').call(), sent),
    );
    await live.recorder.settled();
    await live.writer.flush();
    const store = SessionEventStore.open(live.id, sessionPaths(home, live.id).dbPath);
    const events = store.page(undefined, 100).map((ref) => store.event(ref, { full: true }));
    const stored = store.db.prepare('SELECT agent_id, parent_agent_id FROM net_events ORDER BY seq').all();
    store.close();
    await live.end();
    expect(events.map((e) => [e.kind, e.phase, e.subagent, e.parentSubagent])).toEqual([
      ['model', 'request', undefined, undefined],
      ['model', 'response', undefined, undefined],
      ['model', 'request', Y, X],
      ['model', 'response', Y, X],
      ['http', 'request', X, undefined],
      ['http', 'response', X, undefined],
      // A value with a control character, or over 128 bytes, is refused, not cleaned up.
      ['model', 'request', undefined, undefined],
      ['model', 'response', undefined, undefined],
    ]);
    expect(stored).toEqual([
      { agent_id: null, parent_agent_id: null },
      { agent_id: Y, parent_agent_id: X },
      { agent_id: X, parent_agent_id: null },
      { agent_id: null, parent_agent_id: null },
    ]);
    for (const event of events) decode(sessionEvent, JSON.parse(JSON.stringify(event)));
  });
});
