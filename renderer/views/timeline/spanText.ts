import { formatDuration, formatTime } from '../../app/format.ts';
import { endOf, spanAt, type Link, type SpanKind, type TimelineModel } from './timelineModel.ts';
import type { TimeRange } from './viewport.ts';

// What the hover and the selection line say about a span, a run of spans or a range, in words.

const KIND_NAMES: Record<SpanKind, [string, string]> = {
  turn: ['turn', 'turns'],
  tool: ['tool call', 'tool calls'],
  job: ['background job', 'background jobs'],
  host: ['request', 'requests'],
};

const at = (t: number): string => formatTime(new Date(t).toISOString());

export function kindName(kind: SpanKind, count = 1): string {
  return KIND_NAMES[kind][count === 1 ? 0 : 1];
}

/** Whose a span is: its agent's lane name, or the host it went to (the lane of the quieter hosts names several). */
export function ownerOf(model: TimelineModel, index: number): string {
  const span = spanAt(model, index);
  return span.kind === 'host' ? span.owner : model.lanes[model.rows[model.spanRow[index]!]!.lane]!.label;
}

/** One span: its label, then what it is, whose, how long and when. */
export function describeSpan(model: TimelineModel, index: number, openUntil: number): { title: string; meta: string } {
  const span = spanAt(model, index);
  const end = endOf(span, openUntil);
  const length = span.end === Infinity ? `${formatDuration(end - span.start)} so far, still running` : formatDuration(end - span.start);
  const flags = [span.error ? 'failed' : '', span.resent ? 'resent' : ''].filter(Boolean).join(', ');
  return {
    title: span.label,
    meta: [kindName(span.kind), ownerOf(model, index), length, `at ${at(span.start)}`, flags].filter(Boolean).join(' · '),
  };
}

/** A bar standing for several spans too close to tell apart at this zoom. */
export function describeRun(kind: SpanKind, count: number, range: TimeRange): { title: string; meta: string } {
  return {
    title: `${count} ${kindName(kind, count)}`,
    meta: `${at(range.from)} – ${at(range.to)} (${formatDuration(range.to - range.from)}) · click to zoom in`,
  };
}

export function describeRange(range: TimeRange): string {
  return `${at(range.from)} – ${at(range.to)} (${formatDuration(range.to - range.from)})`;
}

/** A spawn or a return between two agents' lanes. */
export function describeLink(link: Link): { title: string; meta: string } {
  return {
    title: link.label,
    meta: `${link.kind === 'return' ? 'return' : 'spawn'} · at ${at(link.at)}${link.seq !== null ? ' · click to open the call it reached' : ''}`,
  };
}
