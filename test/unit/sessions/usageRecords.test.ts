import { describe, expect, it } from 'vitest';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { ledgerRecords, requestRecords, type CallRow, type NetRow } from '../../../electron/sessions/usageRecords.ts';
import type { SessionRecord } from '../../../electron/store/registry.ts';

const AT = '2026-10-15T12:00:00.000Z';

function net(eventId: string, extra: Partial<NetRow> = {}): NetRow {
  return {
    event_id: eventId,
    timestamp: AT,
    domain: 'api.anthropic.com',
    port: 443,
    conn_type: 'https',
    decision: 'allowed',
    status_code: 200,
    duration_ms: 900,
    process_name: 'node',
    error_kind: null,
    ...extra,
  };
}

function modelCall(netEventId: string | null, extra: Partial<CallRow> = {}): CallRow {
  return {
    net_event_id: netEventId,
    timestamp: AT,
    host: 'api.anthropic.com',
    provider: 'anthropic',
    model: 'claude-sonnet-4-20250514',
    process_name: 'claude',
    status_code: 200,
    duration_ms: 850,
    input_tokens: 10,
    output_tokens: 5,
    usage_details: '{"cache_read":100,"cache_write":20}',
    estimated_cost_usd: 0.0012,
    ...extra,
  };
}

describe('usage records from a session.db', () => {
  it('counts each exchange once with its model call: tokens include cache, cost in micros, priced as recorded', () => {
    const [r, plain] = requestRecords(
      's1',
      [net('aaaaaaaaaaa1'), net('aaaaaaaaaaa2', { domain: 'registry.npmjs.org', process_name: 'npm' })],
      [modelCall('aaaaaaaaaaa1')],
    );
    expect(r).toEqual({
      at: Date.parse(AT),
      session: 's1',
      requests: 1,
      errors: 0,
      tokens: 135,
      costMicros: 1_200,
      pricedRequests: 1,
      priceableRequests: 1,
      durationMs: 850,
      model: 'claude-sonnet-4-20250514',
      endpoint: 'api.anthropic.com',
      host: 'api.anthropic.com',
      agent: 'claude',
      status: '200',
    });
    expect(plain).toMatchObject({
      tokens: 0,
      priceableRequests: 0,
      pricedRequests: 0,
      host: 'registry.npmjs.org',
      agent: 'npm',
      status: '200',
    });
    expect(plain).not.toHaveProperty('endpoint', expect.anything());
  });

  it('marks a call recorded with no cost as priceable but not priced, whatever the pricing data says of its model today', () => {
    const [unknownModel, local, noPrice] = requestRecords(
      's1',
      [net('aaaaaaaaaaa1'), net('aaaaaaaaaaa2'), net('aaaaaaaaaaa3')],
      [
        modelCall('aaaaaaaaaaa1', { model: 'house-model-7', estimated_cost_usd: 0 }),
        modelCall('aaaaaaaaaaa2', { provider: 'ollama', model: 'llama3', estimated_cost_usd: 0, usage_details: '{"pricing":"local"}' }),
        modelCall('aaaaaaaaaaa3', { estimated_cost_usd: 0, usage_details: '{"pricing":"unpriced"}' }),
      ],
    );
    for (const r of [unknownModel, local, noPrice]) expect(r).toMatchObject({ priceableRequests: 1, pricedRequests: 0, costMicros: 0 });
  });

  it('keeps the price the recorder stored for a model the pricing data no longer knows', () => {
    const [r] = requestRecords(
      's1',
      [net('aaaaaaaaaaa1')],
      [modelCall('aaaaaaaaaaa1', { model: 'house-model-7', estimated_cost_usd: 0.002 })],
    );
    expect(r).toMatchObject({ priceableRequests: 1, pricedRequests: 1, costMicros: 2_000 });
  });

  it('leaves tunnels out, counts denials and failures as errors, and keeps a call with no exchange', () => {
    const records = requestRecords(
      's1',
      [
        net('aaaaaaaaaaa1', { conn_type: 'tunnel' }),
        net('aaaaaaaaaaa2', { decision: 'denied', status_code: null }),
        net('aaaaaaaaaaa3', { status_code: 200, error_kind: 'upstream_error' }),
      ],
      [modelCall(null, { host: 'localhost:11434', status_code: 502 })],
    );
    expect(records.map((r) => [r.host, r.status, r.errors])).toEqual([
      ['api.anthropic.com', 'denied', 1],
      ['api.anthropic.com', '200', 1],
      ['localhost:11434', '502', 1],
    ]);
  });

  it('counts every turn on one WebSocket as a request', () => {
    const records = requestRecords(
      's1',
      [net('aaaaaaaaaaa1', { conn_type: 'websocket' })],
      [modelCall('aaaaaaaaaaa1'), modelCall('aaaaaaaaaaa1')],
    );
    expect(records).toHaveLength(2);
  });
});

describe('usage records from main.db ledger', () => {
  const session = {
    id: 'abcdefabcdef' as SessionId,
    stoppedAt: AT,
    updatedAt: AT,
    status: 'vacuumed',
    activity: { lastEventAt: null, inferenceHost: 'api.openai.com', agent: 'codex' },
  } as unknown as SessionRecord;

  it("places a gone session's model rows at its end, with the session's host and agent", () => {
    const [r] = ledgerRecords(session, [
      {
        provider: 'openai',
        model: 'gpt-4o',
        call_count: 3,
        input_tokens: 30,
        output_tokens: 9,
        cache_read_tokens: 1,
        cache_write_tokens: 0,
        estimated_cost: 0.5,
        total_duration_ms: 1_200,
      },
    ]);
    expect(r).toEqual({
      at: Date.parse(AT),
      session: session.id,
      requests: 3,
      errors: 0,
      tokens: 40,
      costMicros: 500_000,
      pricedRequests: 3,
      priceableRequests: 3,
      model: 'gpt-4o',
      endpoint: 'api.openai.com',
      host: 'api.openai.com',
      agent: 'codex',
    });
  });
});
