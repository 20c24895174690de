import { ROW_HEIGHT, visibleEnd, type Row, type TimelineModel } from './timelineModel.ts';
import type { TimeRange } from './viewport.ts';

// What is on screen for a view of the model: the rows the lanes' scroll shows and, in each, its
// spans as bars in pixels, spans too narrow to tell apart merged into one bar. The work follows
// what is in view: a binary search finds a row's first span on screen, and the pointer finds its
// bar by another.

export interface Plot {
  readonly from: number;
  readonly to: number;
  /** Width of the plot in CSS pixels. */
  readonly width: number;
  /** Where open spans end: now while the session runs, else its last instant. */
  readonly openUntil: number;
}

/** Spans first..first+count-1 of a row, drawn as one bar from x0 to x1 (plot pixels, unclipped). */
export interface Bar {
  readonly x0: number;
  readonly x1: number;
  readonly first: number;
  readonly count: number;
}

export const xOf = (plot: Plot, t: number): number => ((t - plot.from) / (plot.to - plot.from)) * plot.width;
export const timeAt = (plot: Plot, x: number): number => plot.from + (x / plot.width) * (plot.to - plot.from);

/** First index in [lo, length) whose value is above `value` (values sorted ascending). */
export function upperBound(values: Float64Array, value: number, lo = 0): number {
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index whose value is at least `value`. */
export function lowerBound(values: Float64Array, value: number, lo = 0): number {
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Spans at least this wide (px) are bars of their own; narrower ones run together with their neighbours. */
export const DISTINCT_PX = 3;

/**
 * The row's spans in the plot as bars. A span too narrow to point at (under DISTINCT_PX) joins
 * the narrow spans within a pixel of it into one bar, up to about DISTINCT_PX wide; a wider span
 * is always a bar of its own, so back-to-back calls stay apart once zoomed in enough to see them.
 * The first span in view is a binary search away; the rest cost a step each.
 */
export function rowBars(row: Row, plot: Plot): Bar[] {
  const { starts, ends, reach } = row;
  const n = starts.length;
  const pxMs = (plot.to - plot.from) / plot.width;
  const distinctMs = DISTINCT_PX * pxMs;
  const endAt = (k: number): number => visibleEnd(starts[k]!, ends[k]!, plot.openUntil);
  const bars: Bar[] = [];
  // Spans before the first whose reach gets into the view all end before it.
  let i = lowerBound(reach, plot.from);
  while (i < n && starts[i]! <= plot.to) {
    let end = endAt(i);
    let j = i + 1;
    if (end - starts[i]! < distinctMs)
      for (; j < n; j++) {
        const next = endAt(j);
        if (starts[j]! > end + pxMs || next - starts[j]! >= distinctMs || end - starts[i]! >= distinctMs) break;
        end = Math.max(end, next);
      }
    bars.push({ x0: xOf(plot, starts[i]!), x1: xOf(plot, end), first: i, count: j - i });
    i = j;
  }
  return bars;
}

/** The rows whose band meets [top, top + height) of the lanes' pixels, as [first, last). */
export function visibleRows(model: TimelineModel, top: number, height: number): [number, number] {
  const rows = model.rows;
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.top + ROW_HEIGHT <= top) lo = mid + 1;
    else hi = mid;
  }
  let last = lo;
  while (last < rows.length && rows[last]!.top < top + height) last += 1;
  return [lo, last];
}

/** The row under a point `y` pixels below the first lane's top, or -1 between lanes. */
export function rowAt(model: TimelineModel, y: number): number {
  const [first] = visibleRows(model, y, 1);
  const row = model.rows[first];
  return row && y >= row.top && y < row.top + ROW_HEIGHT ? first : -1;
}

/** The bar under `x`, or the nearest within `slop` pixels (thin bars are hard to point at). */
export function barAt(bars: readonly Bar[], x: number, slop: number): Bar | null {
  let lo = 0;
  let hi = bars.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (bars[mid]!.x1 < x) lo = mid + 1;
    else hi = mid;
  }
  let best: Bar | null = null;
  let bestDistance = slop;
  for (const bar of [bars[lo - 1], bars[lo]]) {
    if (!bar) continue;
    const distance = x < bar.x0 ? bar.x0 - x : x > bar.x1 ? x - bar.x1 : 0;
    if (distance <= bestDistance) {
      best = bar;
      bestDistance = distance;
    }
  }
  return best;
}

/** The time a bar's spans cover. */
export function barRange(row: Row, bar: Bar, openUntil: number): TimeRange {
  let to = -Infinity;
  for (let k = bar.first; k < bar.first + bar.count; k++) to = Math.max(to, visibleEnd(row.starts[k]!, row.ends[k]!, openUntil));
  return { from: row.starts[bar.first]!, to };
}

/** The span of a row nearest to time `t` (one covering it first), or -1 for an empty row. */
export function nearestInRow(row: Row, t: number, openUntil: number): number {
  const n = row.starts.length;
  if (n === 0) return -1;
  const after = upperBound(row.starts, t);
  let best = -1;
  let bestDistance = Infinity;
  // The last span starting at or before t, the first after it, and any earlier one still running.
  for (const k of [after - 1, after]) {
    if (k < 0 || k >= n) continue;
    const end = visibleEnd(row.starts[k]!, row.ends[k]!, openUntil);
    const distance = t < row.starts[k]! ? row.starts[k]! - t : t > end ? t - end : 0;
    if (distance < bestDistance) {
      best = k;
      bestDistance = distance;
    }
  }
  for (let k = after - 2; k >= 0 && bestDistance > 0 && row.reach[k]! >= t; k--) {
    if (row.ends[k]! >= t) {
      best = k;
      bestDistance = 0;
    }
  }
  return best;
}

/**
 * The spawn or return line under a point of the lanes (y in the lanes' own pixels), or -1: within
 * `slop` pixels of its time and between the two lanes it joins. Links are sorted by time, so the
 * candidates are a binary search away.
 */
export function linkAt(model: TimelineModel, plot: Plot, x: number, y: number, slop: number): number {
  const links = model.links;
  const from = timeAt(plot, x - slop);
  const to = timeAt(plot, x + slop);
  let lo = 0;
  let hi = links.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (links[mid]!.at < from) lo = mid + 1;
    else hi = mid;
  }
  let best = -1;
  let bestDistance = slop;
  const middle = (lane: number): number => model.rows[model.lanes[lane]!.firstRow]!.top + ROW_HEIGHT / 2;
  for (let k = lo; k < links.length && links[k]!.at <= to; k++) {
    const link = links[k]!;
    const [top, bottom] = [middle(link.fromLane), middle(link.toLane)].sort((a, b) => a - b);
    if (y < top! - slop || y > bottom! + slop) continue;
    const distance = Math.abs(xOf(plot, link.at) - x);
    if (distance <= bestDistance) {
      best = k;
      bestDistance = distance;
    }
  }
  return best;
}

/** The time a lane's spans cover (with a subagent's life, spawn to return), or null for an empty lane. */
export function laneRange(model: TimelineModel, lane: number, openUntil: number): TimeRange | null {
  const { firstRow, rowCount, life } = model.lanes[lane]!;
  let from = life?.from ?? Infinity;
  let to = life?.to ?? -Infinity;
  for (let r = firstRow; r < firstRow + rowCount; r++) {
    const row = model.rows[r]!;
    const n = row.starts.length;
    if (n === 0) continue;
    from = Math.min(from, row.starts[0]!);
    to = Math.max(to, visibleEnd(row.starts[n - 1]!, row.reach[n - 1]!, openUntil));
  }
  return from <= to ? { from, to } : null;
}
