import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { ExportLedger } from '../../../electron/otel/exportLedger.ts';
import { SendLoop } from '../../../electron/otel/sendLoop.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// What `capsem otel status` reports after a backend's partial success: the spans it rejected are
// dropped with its reason, and only the rest count as sent (before, they counted as both).

const require = createRequire(import.meta.url);
const root = require('otlp-proto-definitions/build/src/generated/root.js') as {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: {
            ExportTraceServiceResponse: {
              encode(message: unknown): { finish(): Uint8Array };
              fromObject(o: Record<string, unknown>): unknown;
            };
          };
        };
      };
    };
  };
};
const Response = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;

const home = tempHome();
afterEach(() => home.remove());
const spans = (n: number): { spanId: string }[] => Array.from({ length: n }, (_, i) => ({ spanId: i.toString(16).padStart(16, '0') }));

describe('SendLoop', () => {
  it('counts a partial success: the rejected spans as dropped with the reason, the rest as sent', async () => {
    const answer = Response.encode(
      Response.fromObject({ partialSuccess: { rejectedSpans: 3, errorMessage: 'span name too long' } }),
    ).finish();
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(answer)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`);
    const ledger = ExportLedger.open(home);
    try {
      ledger.enqueue(url.href, 's1', spans(10), () => new Uint8Array(20));
      const loop = new SendLoop(ledger, url, { headers: {} });
      expect(await loop.drained(Date.now() + 10_000)).toBe(true);
      await loop.stop();
      const status = ledger.status(url.href);
      expect(status).toMatchObject({ queuedBatches: 0, sentSpans: 7, sentRequests: 1, droppedSpans: 3 });
      expect(status.drops).toEqual([
        expect.objectContaining({ sessionId: 's1', spans: 3, reason: 'the endpoint rejected them: span name too long' }),
      ]);
    } finally {
      ledger.close();
      await new Promise((r) => server.close(r));
    }
  });
});
