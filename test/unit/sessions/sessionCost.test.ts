import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { sessionCost } from '../../../electron/sessions/cost.ts';
import { SessionStores } from '../../../electron/sessions/sessionStores.ts';
import { anthropicExchange, modelExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The Cost view's figures for a session with a priced call and one the recorder could not price:
// the local model's call is counted apart, so the window says "unpriced" rather than $0.00.

const home = tempHome();
afterAll(() => home.remove());
const stores = new SessionStores(home);
afterAll(() => stores.close());
let id: SessionId;

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

beforeAll(async () => {
  const live = await liveSession(home);
  await live.recorder.record(anthropicExchange({ usage: { input: 1_000, output: 500 } }));
  const chat = { model: 'llama3.2', stream: false, messages: [{ role: 'user', content: 'hello' }] };
  const answer = {
    model: 'llama3.2',
    message: { role: 'assistant', content: 'hi' },
    done: true,
    done_reason: 'stop',
    prompt_eval_count: 7,
    eval_count: 3,
  };
  await live.recorder.record(modelExchange('localhost', '/api/chat', json(chat), json(answer), { port: 11434, scheme: 'http' }));
  await live.end();
  id = live.id;
});

describe('sessions.cost', () => {
  it("prices the Anthropic call and counts the local model's call as unpriced, not as a $0 call", () => {
    const cost = sessionCost(stores.get(id));
    const anthropic = cost.byModel.find((m) => m.provider === 'anthropic')!;
    const local = cost.byModel.find((m) => m.provider === 'ollama')!;
    expect(anthropic).toMatchObject({ calls: 1, unpricedCalls: 0 });
    expect(anthropic.costUsd).toBeGreaterThan(0);
    expect(local).toMatchObject({ calls: 1, unpricedCalls: 1, costUsd: 0, inputTokens: 7, outputTokens: 3 });
  });
});
