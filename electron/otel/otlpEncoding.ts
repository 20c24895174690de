import { SpanKind, SpanStatusCode, TraceFlags, type HrTime } from '@opentelemetry/api';
import { hrTimeDuration, millisToHrTime } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { SpanRecord } from './spanRecord.ts';

// Span records as one OTLP/HTTP protobuf request body (ExportTraceServiceRequest), encoded by the
// official serializer from the SDK's ReadableSpan shape: Capsem builds no protobuf by hand.

const SCOPE = { name: 'capsem', version: '1' };

export function capsemResource(version: string): Resource {
  return resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'capsem', [ATTR_SERVICE_VERSION]: version });
}

function readable(traceId: string, span: SpanRecord, resource: Resource): ReadableSpan {
  const startTime: HrTime = millisToHrTime(span.start);
  const endTime: HrTime = millisToHrTime(span.end);
  const context = { traceId, spanId: span.spanId, traceFlags: TraceFlags.SAMPLED };
  return {
    name: span.name,
    kind: span.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL,
    spanContext: () => context,
    parentSpanContext: span.parentId === null ? undefined : { traceId, spanId: span.parentId, traceFlags: TraceFlags.SAMPLED },
    startTime,
    endTime,
    status: span.error === null ? { code: SpanStatusCode.UNSET } : { code: SpanStatusCode.ERROR, message: span.error },
    attributes: span.attributes,
    links: [],
    events: span.events.map((e) => ({ name: e.name, time: millisToHrTime(e.at), attributes: e.attributes, droppedAttributesCount: 0 })),
    duration: hrTimeDuration(startTime, endTime),
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** One request body for `spans`, all of one trace. */
export function encodeSpans(traceId: string, spans: readonly SpanRecord[], resource: Resource): Uint8Array {
  const body = ProtobufTraceSerializer.serializeRequest(spans.map((s) => readable(traceId, s, resource)));
  if (body === undefined) throw new Error(`the OTLP serializer could not encode ${spans.length} spans`);
  return body;
}
