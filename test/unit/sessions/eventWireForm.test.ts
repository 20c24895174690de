import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import {
  dnsEvent,
  fileEvent,
  httpEvent,
  modelEvent,
  rawCapture,
  toolCallEvent,
  toolResultEvent,
} from '../../../electron/sessions/eventBuilders.ts';
import { parseMcpExchange } from '../../../electron/telemetry/mcp.ts';

// The wire form of every event kind, each with every field set, pinned in a golden file: a
// change to a field's name or meaning fails here first. Regenerate deliberately with
// UPDATE_GOLDEN=1 and bump SCHEMA_VERSION when a field changes meaning or goes away.

const GOLDEN = fileURLToPath(new URL('../../fixtures/session-event.golden.json', import.meta.url));
const S = '0b5c1c3e-1111-4222-8333-444455556666';
const identity = { event_id: '00000000a001', trace_id: 'trace-1', turn_id: 'turn-1' };

function everyKind(): unknown {
  const netRow = {
    ...identity,
    seq: 1,
    timestamp: '2026-11-29T10:00:00.000Z',
    domain: 'api.anthropic.com',
    port: 8443,
    decision: 'allowed',
    process_name: 'claude',
    pid: 412,
    method: 'POST',
    path: '/v1/messages%20x?beta=true',
    query: 'beta=true',
    status_code: 502,
    bytes_sent: 100,
    bytes_received: 200,
    duration_ms: 30,
    ttfb_ms: 12,
    matched_rule: 'default.allow-public',
    conn_type: 'https',
    request_headers: '{"content-type":"application/json"}',
    response_headers: '{"content-type":"text/event-stream"}',
    error_kind: 'upstream_tls',
    error_message: 'certificate has expired at api.anthropic.com:8443',
    credential_outcomes: 'substituted',
  };
  const blobs = [
    { direction: 'request', body: Buffer.from('{"model":"claude"}'), truncated: 0 },
    { direction: 'response', body: Buffer.from([0x1f, 0x8b, 0xff]), truncated: 1 },
  ];
  const httpRequest = httpEvent(S, netRow, 'request');
  httpRequest.raw = rawCapture(netRow, blobs, 'request');
  const http = httpEvent(S, netRow, 'final');
  http.raw = rawCapture(netRow, blobs, 'final');
  const deniedRow = {
    ...netRow,
    seq: 8,
    event_id: '00000000a008',
    domain: '169.254.169.254',
    port: 80,
    conn_type: 'http',
    decision: 'denied',
    status_code: 403,
    matched_rule: 'default.deny-cloud-metadata',
    error_kind: 'destination_denied',
    error_message: 'blocked by policy rule default.deny-cloud-metadata',
    credential_outcomes: null,
  };
  const mcpRow = {
    ...netRow,
    seq: 9,
    event_id: '00000000a009',
    domain: 'mcp.example.com',
    port: 443,
    path: '/mcp',
    query: null,
    status_code: 200,
    error_kind: null,
    error_message: null,
    credential_outcomes: null,
    request_headers: '{"user-agent":"claude-cli/2.0.1 (external, cli)"}',
  };
  const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'snapshots_create', arguments: { name: 'before' } } };
  const mcpCall = parseMcpExchange(
    call,
    'application/json',
    Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}'),
  )[0]!;
  const mcpBare = parseMcpExchange(
    { ...call, method: 'ping', params: ['x'] },
    'application/json',
    Buffer.from('{"jsonrpc":"2.0","id":7,"result":"pong"}'),
  )[0]!;
  const mcpError = parseMcpExchange(
    call,
    'application/json',
    Buffer.from('{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no such tool","data":{"tool":"x"}}}'),
  )[0]!;
  const modelRow = {
    ...identity,
    seq: 2,
    event_id: '00000000a002',
    net_event_id: '00000000a001',
    host: 'api.anthropic.com',
    timestamp: '2026-11-29T10:00:00.000Z',
    provider: 'anthropic',
    model: 'claude-sonnet-4-20250514',
    process_name: 'claude',
    pid: 412,
    method: 'POST',
    path: '/v1/messages',
    stream: 1,
    request_bytes: 100,
    message_id: 'msg_1',
    status_code: 429,
    text_content: 'Sure.',
    thinking_content: 'hmm',
    stop_reason: 'tool_use',
    input_tokens: 10,
    output_tokens: 5,
    duration_ms: 30,
    response_bytes: 200,
    estimated_cost_usd: 0.000105,
    usage_details: '{"cache_read":3,"cache_write":2,"thinking":1}',
    messages_count: 3,
    tools_count: 1,
    ttfb_ms: 9,
    request_headers: '{"user-agent":"claude-cli/2.0.1 (external, cli)"}',
    decision: 'allowed',
    matched_rule: 'default.allow-public',
    credential_outcomes: 'substituted',
  };
  const modelContext = {
    full: true,
    requestBody: {
      system: 'sys',
      max_tokens: 64,
      temperature: 0.5,
      top_p: 0.9,
      stream: true,
      tool_choice: { type: 'auto' },
      tools: [{ name: 'Bash', description: 'run', input_schema: { type: 'object' } }],
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_0', name: 'Bash', input: { command: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_0', content: 'a.txt' }] },
      ],
    },
    toolCalls: [{ call_id: 'toolu_1', tool_name: 'Bash', arguments: '{"command":"npm test"}' }],
    toolResults: [],
  };
  const summaryRow = {
    ...identity,
    seq: 2,
    timestamp: 't',
    provider: 'openai',
    method: 'POST',
    path: '/v1/chat/completions',
    messages_count: 4,
    tools_count: 2,
  };
  const summary = { full: false, toolCalls: [], toolResults: [] };
  const toolRow = {
    ...identity,
    seq: 3,
    event_id: '00000000a003',
    timestamp: '2026-11-29T10:00:01.000Z',
    model_call_id: 1,
    provider: 'anthropic',
    status: 'error',
    call_index: 0,
    call_id: 'toolu_1',
    tool_name: 'Bash',
    arguments: '{"command":"npm test"}',
    response_preview: 'failed',
    origin: 'native',
    decision: 'allowed',
    duration_ms: 40,
    error_message: 'disk full',
    process_name: 'claude',
    policy_rule: 'default.allow-public',
  };
  return {
    httpRequest,
    http,
    httpDenied: httpEvent(S, deniedRow, 'final'),
    modelRequest: modelEvent(S, modelRow, modelContext, 'request'),
    model: modelEvent(S, modelRow, modelContext, 'final'),
    modelSummaryRequest: modelEvent(S, summaryRow, summary, 'request'),
    modelSummary: modelEvent(S, summaryRow, summary, 'final'),
    mcpRequest: httpEvent(S, mcpRow, 'request', mcpCall),
    mcpResponse: httpEvent(S, mcpRow, 'final', mcpCall),
    mcpResponseSummary: httpEvent(S, mcpRow, 'final', mcpCall, false),
    mcpBareRequest: httpEvent(S, mcpRow, 'request', mcpBare),
    mcpBareResponse: httpEvent(S, mcpRow, 'final', mcpBare),
    mcpErrorResponse: httpEvent(S, mcpRow, 'final', mcpError),
    toolCall: toolCallEvent(S, toolRow, { modelCallSeq: 2 }),
    toolResult: toolResultEvent(
      S,
      {
        ...identity,
        seq: 4,
        event_id: '00000000a004',
        timestamp: '2026-11-29T10:00:02.000Z',
        model_call_id: 2,
        call_id: 'toolu_1',
        content_preview: 'a.txt',
        is_error: 1,
      },
      { modelCallSeq: 5 },
    ),
    file: fileEvent(S, {
      ...identity,
      seq: 5,
      event_id: '00000000a005',
      timestamp: '2026-11-29T10:00:03.000Z',
      action: 'modified',
      path: 'src/main.ts',
      size: 42,
    }),
    dns: dnsEvent(S, {
      ...identity,
      seq: 6,
      event_id: '00000000a006',
      timestamp: '2026-11-29T10:00:04.000Z',
      name: 'api.anthropic.com',
      type: 'AAAA',
      rcode: 'NOERROR',
      answers: '["fd00:c5e3::c612:1"]',
      resolved: '["160.79.104.10","2607:6bc0::10"]',
      decision: 'allowed',
      matched_rule: 'default.allow-public',
      process_name: 'curl',
      pid: 77,
      duration_ms: 3,
      error_message: null,
    }),
    dnsDenied: dnsEvent(S, {
      ...identity,
      seq: 7,
      event_id: '00000000a007',
      timestamp: '2026-11-29T10:00:05.000Z',
      name: 'metadata.google.internal',
      type: 'A',
      rcode: 'NOERROR',
      answers: '["198.18.0.2"]',
      resolved: '[]',
      decision: 'denied',
      matched_rule: 'default.deny-cloud-metadata',
      process_name: 'python3',
      pid: 78,
      duration_ms: 0,
      error_message: 'blocked by policy rule default.deny-cloud-metadata',
    }),
  };
}

it('keeps the event wire form of every kind', () => {
  const actual = `${JSON.stringify(everyKind(), null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(GOLDEN)) writeFileSync(GOLDEN, actual);
  expect(actual).toBe(readFileSync(GOLDEN, 'utf8'));
});
