import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A plain OTLP/HTTP trace receiver on loopback, decoding each request with the message types
// generated from the official opentelemetry-proto definitions (an earlier @opentelemetry/otlp-
// transformer's protobufjs root, installed under its own name: independent of the serializer the
// exporter uses). It can fail the first requests with a status, then hang some (never answer), as
// a backend that is down or slow does.

const require = createRequire(import.meta.url);
interface ProtoType {
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}
const root = require('otlp-proto-definitions/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType } } } } };
};
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

export type AttributeValue = string | number | boolean | AttributeValue[];

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly name: string;
  readonly kind: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Record<string, AttributeValue>;
  readonly events: { name: string; attributes: Record<string, AttributeValue> }[];
  readonly status: { code: number; message: string | null };
  readonly resource: Record<string, AttributeValue>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}

function valueOf(v: AnyValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return (v.arrayValue?.values ?? []).map(valueOf);
}

const attributesOf = (list: { key: string; value: AnyValue }[] | undefined): Record<string, AttributeValue> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/** Every span of one ExportTraceServiceRequest body. */
export function decodeTraces(body: Uint8Array): ReceivedSpan[] {
  const request = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), {
    longs: String,
    bytes: String,
    defaults: false,
  }) as {
    resourceSpans?: {
      resource?: { attributes?: { key: string; value: AnyValue }[] };
      scopeSpans?: { spans?: Record<string, unknown>[] }[];
    }[];
  };
  const hex = (b64: unknown): string => Buffer.from(String(b64 ?? ''), 'base64').toString('hex');
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? []) {
        const status = (s.status ?? {}) as { code?: number; message?: string };
        spans.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: s.parentSpanId ? hex(s.parentSpanId) || null : null,
          name: String(s.name),
          kind: Number(s.kind ?? 0),
          startMs: Number(BigInt(String(s.startTimeUnixNano)) / 1_000_000n),
          endMs: Number(BigInt(String(s.endTimeUnixNano)) / 1_000_000n),
          attributes: attributesOf(s.attributes as { key: string; value: AnyValue }[]),
          events: ((s.events ?? []) as { name: string; attributes?: { key: string; value: AnyValue }[] }[]).map((e) => ({
            name: e.name,
            attributes: attributesOf(e.attributes),
          })),
          status: { code: status.code ?? 0, message: status.message ?? null },
          resource: attributesOf(rs.resource?.attributes),
        });
      }
  return spans;
}

export interface ReceiverBehaviour {
  /** Answer the first N requests with this status (503 by default). */
  failFirst?: number;
  failStatus?: number;
  /** Then leave the next N requests unanswered. */
  hangNext?: number;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every request body taken, as received. */
  readonly bodies: Buffer[] = [];
  requests = 0;
  private readonly hung: ServerResponse[] = [];

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
    private behaviour: ReceiverBehaviour,
  ) {}

  static async start(behaviour: ReceiverBehaviour = {}): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | null = null;
    const server = createServer((req, res) => void receiver!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, behaviour);
    return receiver;
  }

  behave(behaviour: ReceiverBehaviour): void {
    this.behaviour = behaviour;
  }

  /** Spans by id; a span received twice is there twice in `spans`. */
  byId(): Map<string, ReceivedSpan> {
    return new Map(this.spans.map((s) => [s.spanId, s]));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.requests += 1;
    if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
      res.writeHead(404).end();
      return;
    }
    const b = this.behaviour;
    if ((b.failFirst ?? 0) > 0) {
      b.failFirst! -= 1;
      res.writeHead(b.failStatus ?? 503).end();
      return;
    }
    if ((b.hangNext ?? 0) > 0) {
      b.hangNext! -= 1;
      this.hung.push(res);
      return;
    }
    const body = Buffer.concat(chunks);
    this.bodies.push(body);
    this.spans.push(...decodeTraces(body));
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
