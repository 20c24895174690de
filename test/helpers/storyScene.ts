import type { ClaudeCodeAnswer, ClaudeCodeConversation } from '../../electron/dev/claudeCodeWire.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { readTimeline, type Timeline } from '../../electron/sessions/timeline.ts';
import { sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { claudeCodeExchange, httpsExchange } from './exchanges.ts';
import { liveSession, type LiveSession } from './sessionFixture.ts';

// A session made of Claude Code's model calls on a clock the test sets, recorded through the
// recording pipeline, then read back as its timeline: the wire traffic a rule of the story is
// pinned on.

const ORIGIN = Date.UTC(2026, 10, 29, 10, 0, 0);

/** The time `seconds` after the scene's origin, as the timeline writes it. */
export const at = (seconds: number): string => new Date(ORIGIN + seconds * 1000).toISOString();

export class StoryScene {
  private constructor(
    private readonly home: CapsemHome,
    readonly live: LiveSession,
  ) {}

  static async start(home: CapsemHome): Promise<StoryScene> {
    return new StoryScene(home, await liveSession(home));
  }

  /** `conversation`'s next model call, started `seconds` in and lasting one second unless `fields` say otherwise. */
  call(conversation: ClaudeCodeConversation, seconds: number, answer: ClaudeCodeAnswer = {}, fields: Partial<Exchange> = {}): void {
    void this.live.recorder.record(claudeCodeExchange(conversation.call(answer), new Date(at(seconds)), fields));
  }

  /** A model call of `conversation`'s agent whose upstream could not be dialled: the proxy answered 502 itself. */
  failedDial(conversation: ClaudeCodeConversation, seconds: number): void {
    this.call(
      conversation,
      seconds,
      { joins: false },
      {
        status: 502,
        ttfbMs: null,
        durationMs: 20,
        responseHeaders: null,
        responseBody: { bytes: Buffer.alloc(0), total: 0, truncated: false },
        error: { kind: 'upstream_refused', message: 'api.anthropic.com:443 refused the connection' },
      },
    );
  }

  /** Any other exchange, started `seconds` in. */
  exchange(host: string, path: string, seconds: number, fields: Partial<Exchange> = {}): void {
    void this.live.recorder.record(httpsExchange(host, path, { startedAt: new Date(at(seconds)), ...fields }));
  }

  /** The timeline as the API computes it now; `ended` once the session has ended. */
  async timeline(ended = false): Promise<Timeline> {
    await this.live.recorder.settled();
    await this.live.writer.flush();
    const store = SessionEventStore.open(this.live.id, sessionPaths(this.home, this.live.id).dbPath);
    try {
      return readTimeline(store, ended);
    } finally {
      store.close();
    }
  }

  end(): Promise<void> {
    return this.live.end();
  }
}
