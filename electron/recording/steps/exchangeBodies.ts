import { header } from './exchangeFacts.ts';
import { writesTo, type ExchangeStep } from './step.ts';

// The exchange's bodies, decoded from their Content-Encoding, in event_body_blobs. Last in the
// list: their memory is handed over to the writer thread, after every other step's use of it.

export const exchangeBodies: ExchangeStep = {
  name: 'bodies',
  handles: 'exchange',
  reads: 'the request and response bodies, decoded',
  writes: ['event_body_blobs'],
  description: 'Keeps the request and response bodies, decoded, up to the body cap',
  capabilities: ['body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['event_body_blobs']),
  record: ({ ex, request, response, at }) => ({
    rows: (eventId, sink) => {
      for (const [direction, captured, decoded, headers] of [
        ['request', ex.requestBody, request, ex.requestHeaders],
        ['response', ex.responseBody, response, ex.responseHeaders],
      ] as const) {
        if (captured.total === 0 || decoded.bytes.length === 0) continue;
        sink.append(
          'event_body_blobs',
          {
            event_id: eventId,
            source_table: 'net_events',
            direction,
            content_type: header(headers, 'content-type') ?? null,
            content_encoding: header(headers, 'content-encoding') ?? null,
            original_bytes: captured.total,
            stored_bytes: decoded.bytes.length,
            truncated: captured.truncated || decoded.truncated ? 1 : 0,
            body: decoded.bytes,
            created_at: at,
          },
          { handOver: true },
        );
      }
    },
  }),
};
