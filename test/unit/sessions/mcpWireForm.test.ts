import fc from 'fast-check';
import { expect, it } from 'vitest';
import { httpEvent } from '../../../electron/sessions/eventBuilders.ts';
import { parseMcpExchange } from '../../../electron/telemetry/mcp.ts';
import { decode, sessionEvent } from '../../helpers/cortexClient.ts';

// An MCP server and its client choose the JSON-RPC bodies, so any params, result or error they
// send must still reach a spec client as the objects the spec types, never a bare value.

const row = {
  seq: 4,
  event_id: '00000000000a',
  timestamp: '2026-11-29T10:00:00.000Z',
  domain: 'mcp.example.com',
  port: 443,
  decision: 'allowed',
  method: 'POST',
  path: '/mcp',
  status_code: 200,
  duration_ms: 3,
  bytes_sent: 10,
  bytes_received: 10,
};

/** What a value looks like once it has been on the wire (-0 comes back as 0). */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;
const asObject = (value: unknown): unknown =>
  wire(typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { value });

it('sends any JSON-RPC params, result or error as objects a spec client decodes (property)', () => {
  fc.assert(
    fc.property(
      fc.jsonValue(),
      fc.jsonValue(),
      fc.option(fc.jsonValue(), { nil: undefined }),
      fc.oneof(fc.string(), fc.integer()),
      (params, result, error, id) => {
        const answer = error === undefined ? { jsonrpc: '2.0', id, result } : { jsonrpc: '2.0', id, error };
        const message = parseMcpExchange(
          { jsonrpc: '2.0', id, method: 'tools/call', params },
          'application/json',
          Buffer.from(JSON.stringify(answer)),
        )[0]!;
        const request = decode(sessionEvent, wire(httpEvent('s', row, 'request', message)));
        const response = decode(sessionEvent, wire(httpEvent('s', row, 'final', message)));
        expect(request.mcp!.params).toEqual(asObject(params));
        expect(response.requestId).toBe(request.requestId);
        if (error === undefined) expect(response.mcp!.result).toEqual(asObject(result));
      },
    ),
    { numRuns: 300, examples: [[JSON.parse('{"__proto__": ""}'), JSON.parse('{"__proto__": ""}'), undefined, 1]] },
  );
});
