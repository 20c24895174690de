import fc from 'fast-check';
import { it } from 'vitest';
import { httpEvent, modelEvent } from '../../../electron/sessions/eventBuilders.ts';
import { decode, sessionEvent } from '../../helpers/cortexClient.ts';

// A session.db another tool wrote, and the request bodies an agent chose, can hold any value in
// any column or field. Whatever they hold, each event must decode into Cortex's Go types, which
// fail a whole page on one fraction in an int, one string in a map or one time that is not RFC 3339.

const anyCell = fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null), fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }));
const anyTime = fc.oneof(
  fc.string(),
  fc.date({ noInvalidDate: true, min: new Date('1970-01-01'), max: new Date('9999-12-31') }).map((d) => d.toISOString()),
  fc.constant('2026-11-29 10:00:00'),
);
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

const rowOf = (cells: Record<string, unknown>, timestamp: string): Record<string, unknown> => ({
  seq: 3,
  event_id: '00000000000a',
  timestamp,
  domain: 'api.anthropic.com',
  host: 'api.anthropic.com',
  provider: 'anthropic',
  path: '/v1/messages',
  decision: 'allowed',
  ...cells,
});

it('sends every HTTP and model event in the JSON types a Go client decodes, whatever the row holds (property)', () => {
  const columns = ['port', 'status_code', 'duration_ms', 'ttfb_ms', 'bytes_sent', 'bytes_received', 'input_tokens', 'output_tokens', 'pid'];
  fc.assert(
    fc.property(
      fc.record(Object.fromEntries(columns.map((c) => [c, anyCell]))),
      anyTime,
      fc.option(fc.constantFrom('upstream_timeout', 'upstream_error', 'proxy_error', 'client_canceled'), { nil: undefined }),
      (cells, timestamp, errorKind) => {
        const row = rowOf({ ...cells, error_kind: errorKind }, timestamp);
        for (const slot of ['request', 'final'] as const) {
          decode(sessionEvent, wire(httpEvent('s', row, slot)));
          decode(sessionEvent, wire(modelEvent('s', row, { full: true, toolCalls: [], toolResults: [] }, slot)));
        }
      },
    ),
    { numRuns: 300 },
  );
});

it("sends a model request's settings and tool schemas in the JSON types a Go client decodes, whatever the agent sent (property)", () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), (maxTokens, temperature, schema, toolChoice) => {
      const requestBody = {
        model: 'claude-sonnet-4-20250514',
        max_tokens: maxTokens,
        temperature,
        tool_choice: toolChoice,
        tools: [{ name: 'lookup', input_schema: schema }],
        messages: [{ role: 'user', content: 'hello' }],
      };
      decode(
        sessionEvent,
        wire(
          modelEvent('s', rowOf({}, '2026-11-29T10:00:00.000Z'), { full: true, requestBody, toolCalls: [], toolResults: [] }, 'request'),
        ),
      );
    }),
    { numRuns: 300 },
  );
});
