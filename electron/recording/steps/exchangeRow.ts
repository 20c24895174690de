import { recordedHeaders } from '../../proxy/exchange.ts';
import { preview } from './exchangeFacts.ts';
import { writesTo, type ExchangeStep } from './step.ts';

// The exchange's own net_events row: where it went, what was sent and answered, how long it took,
// how it failed. Written first, whatever the other steps make of the exchange: every other row
// hangs off its event id.

export const exchangeRow: ExchangeStep = {
  name: 'exchange',
  handles: 'exchange',
  reads: 'the exchange: destination, method and path, status, headers, body sizes and previews, timing, error',
  writes: ['net_events'],
  description: "Records the exchange (headers, body previews, timing, error) as its row in the session's session.db",
  capabilities: ['headers.read', 'body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['net_events']),
  record: ({ ex, request, response, at }) => ({
    columns: {
      event_id: ex.eventId,
      timestamp: at,
      domain: ex.host,
      port: ex.port,
      process_name: ex.processName,
      pid: ex.pid,
      method: ex.method,
      path: ex.path,
      query: ex.query,
      status_code: ex.status,
      bytes_sent: ex.requestBody.total,
      bytes_received: ex.responseBody.total,
      duration_ms: ex.durationMs,
      ttfb_ms: ex.ttfbMs,
      request_headers: JSON.stringify(recordedHeaders(ex.requestHeaders)),
      response_headers: ex.responseHeaders ? JSON.stringify(recordedHeaders(ex.responseHeaders)) : null,
      request_body_preview: preview(request.bytes),
      response_body_preview: preview(response.bytes),
      conn_type: ex.kind === 'websocket' ? 'websocket' : ex.scheme,
      error_kind: ex.error?.kind ?? (response.error ? 'decode_error' : null),
      error_message: ex.error?.message ?? response.error ?? null,
    },
  }),
};
