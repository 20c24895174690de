import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  barAt,
  DISTINCT_PX,
  nearestInRow,
  rowAt,
  rowBars,
  visibleRows,
  xOf,
  type Plot,
} from '../../../renderer/views/timeline/timelineLayout.ts';
import { buildTimelineModel, ROW_HEIGHT, type Row } from '../../../renderer/views/timeline/timelineModel.ts';

// Spans to pixels: which spans a view shows, merged into bars only where they are too narrow to
// tell apart, and what the pointer is on, checked against plain loops over every span.

const T0 = Date.parse('2025-03-03T08:00:00.000Z');

/** One row of tool spans, given as [start, length] in ms from T0 (any order, overlapping or not). */
function rowOf(spans: readonly (readonly [number, number])[]): Row {
  const tools = spans.map(([from, length], i) => ({
    agent: 'main',
    id: `t${i}`,
    start: new Date(T0 + from).toISOString(),
    end: new Date(T0 + from + length).toISOString(),
    label: `tool ${i}`,
    seq: i,
    open: false,
  }));
  const model = buildTimelineModel({ start: null, end: null, agents: [], turns: [], tools, jobs: [], returns: [], hosts: [] });
  return model.rows.find((r) => r.kind === 'tool')!;
}

/** Non-overlapping spans, as a row keeps them under its cap: gaps and lengths from 0 up to `max` ms. */
const sequential = (max: number) =>
  fc.array(fc.tuple(fc.integer({ min: 0, max }), fc.integer({ min: 0, max })), { minLength: 1, maxLength: 200 }).map((pairs) => {
    let t = 0;
    return pairs.map(([gap, length]) => {
      const span = [t + gap, length] as const;
      t += gap + length;
      return span;
    });
  });

const plotArb = fc.record({
  from: fc.integer({ min: -5000, max: 200_000 }),
  length: fc.integer({ min: 5, max: 300_000 }),
  width: fc.integer({ min: 50, max: 2000 }),
});

describe('rowBars', () => {
  it('shows every span in the view exactly once, in order, and none outside it', () => {
    fc.assert(
      fc.property(sequential(5000), plotArb, (spans, p) => {
        const row = rowOf(spans);
        const plot: Plot = { from: T0 + p.from, to: T0 + p.from + p.length, width: p.width, openUntil: T0 + 10_000_000 };
        const bars = rowBars(row, plot);
        const shown = bars.flatMap((b) => Array.from({ length: b.count }, (_, k) => b.first + k));
        const inView = Array.from(row.starts.keys()).filter((k) => row.ends[k]! >= plot.from && row.starts[k]! <= plot.to);
        // A merged bar may carry a span just past the right edge that starts within its last pixel.
        expect(shown.slice(0, inView.length)).toEqual(inView);
        for (const k of shown.slice(inView.length)) expect(xOf(plot, row.starts[k]!)).toBeLessThanOrEqual(p.width + 1 + DISTINCT_PX);
        for (let b = 1; b < bars.length; b++) expect(bars[b]!.x0).toBeGreaterThanOrEqual(bars[b - 1]!.x0);
      }),
    );
  });

  it('keeps a span as wide as DISTINCT_PX a bar of its own, and merges only narrower spans within a pixel of each other', () => {
    fc.assert(
      fc.property(sequential(3000), plotArb, (spans, p) => {
        const row = rowOf(spans);
        const plot: Plot = { from: T0 + p.from, to: T0 + p.from + p.length, width: p.width, openUntil: T0 + 10_000_000 };
        const pxMs = p.length / p.width;
        for (const bar of rowBars(row, plot)) {
          if (bar.count === 1) continue;
          for (let k = bar.first; k < bar.first + bar.count; k++) {
            expect(row.ends[k]! - row.starts[k]!).toBeLessThan(DISTINCT_PX * pxMs);
            if (k > bar.first) expect(row.starts[k]! - row.ends[k - 1]!).toBeLessThanOrEqual(pxMs + 1e-6);
          }
          expect(bar.x1).toBeCloseTo(xOf(plot, row.ends[bar.first + bar.count - 1]!), 6);
        }
      }),
    );
  });

  it('draws 10,000 back-to-back turns zoomed out as a few hundred bars, and zoomed in as the turns themselves', () => {
    const row = rowOf(Array.from({ length: 10_000 }, (_, i) => [i * 4000, 3000] as const));
    const whole = rowBars(row, { from: T0, to: T0 + 40_000_000, width: 1000, openUntil: T0 });
    expect(whole.length).toBeLessThan(1000 / DISTINCT_PX + 1);
    expect(whole.reduce((n, b) => n + b.count, 0)).toBe(10_000);
    const close = rowBars(row, { from: T0 + 400_000, to: T0 + 440_000, width: 1000, openUntil: T0 });
    expect(close.map((b) => b.count)).toEqual(Array(close.length).fill(1));
    expect(close.map((b) => b.first)).toEqual(Array.from({ length: 11 }, (_, k) => 100 + k));
  });

  it('runs an open span to openUntil', () => {
    const row = rowOf([[0, 1000]]);
    const open = { ...row, ends: Float64Array.of(Infinity), reach: Float64Array.of(Infinity) };
    const [bar] = rowBars(open, { from: T0, to: T0 + 10_000, width: 1000, openUntil: T0 + 5000 });
    expect(bar!.x1).toBe(500);
  });
});

describe('barAt', () => {
  it('finds the bar under the pointer, or the nearest within the slop, as a scan of every bar does', () => {
    fc.assert(
      fc.property(sequential(4000), fc.integer({ min: -20, max: 1020 }), fc.integer({ min: 0, max: 6 }), (spans, x, slop) => {
        const row = rowOf(spans);
        const last = row.ends.at(-1)!;
        const bars = rowBars(row, { from: T0, to: Math.max(T0 + 10, last), width: 1000, openUntil: last });
        const distance = (b: (typeof bars)[number]) => (x < b.x0 ? b.x0 - x : x > b.x1 ? x - b.x1 : 0);
        const found = barAt(bars, x, slop);
        const best = Math.min(...bars.map(distance));
        if (best > slop) expect(found).toBeNull();
        else expect(distance(found!)).toBe(best);
      }),
    );
  });
});

describe('rows on screen', () => {
  it('finds the rows a scroll shows and the row under a point', () => {
    const tools = Array.from({ length: 8 }, (_, i) => ({
      agent: 'main',
      id: `t${i}`,
      start: new Date(T0).toISOString(),
      end: new Date(T0 + 1000).toISOString(),
      label: `tool ${i}`,
      seq: i,
      open: false,
    }));
    const hosts = ['a.example', 'b.example'].map((host, i) => ({
      host,
      start: tools[0]!.start,
      end: tools[0]!.end,
      label: 'http',
      seq: 50 + i,
      open: false,
    }));
    const model = buildTimelineModel({ start: null, end: null, agents: [], turns: [], tools, jobs: [], returns: [], hosts });
    for (let y = -10; y < model.height + 10; y += 3) {
      const expected = model.rows.findIndex((r) => y >= r.top && y < r.top + ROW_HEIGHT);
      expect(rowAt(model, y)).toBe(expected);
      const [first, last] = visibleRows(model, y, 40);
      const meets = model.rows.flatMap((r, i) => (r.top + ROW_HEIGHT > y && r.top < y + 40 ? [i] : []));
      expect(Array.from({ length: last - first }, (_, k) => first + k)).toEqual(meets);
    }
  });
});

describe('nearestInRow', () => {
  it('picks a span covering the time, else the closest one, as a scan does', () => {
    fc.assert(
      fc.property(sequential(3000), fc.integer({ min: -2000, max: 400_000 }), (spans, offset) => {
        const row = rowOf(spans);
        const t = T0 + offset;
        const distance = (k: number) => (t < row.starts[k]! ? row.starts[k]! - t : t > row.ends[k]! ? t - row.ends[k]! : 0);
        const best = Math.min(...Array.from(row.starts.keys()).map(distance));
        expect(distance(nearestInRow(row, t, T0 + 1e9))).toBe(best);
      }),
    );
    const empty = buildTimelineModel({ start: null, end: null, agents: [], turns: [], tools: [], jobs: [], returns: [], hosts: [] });
    expect(nearestInRow(empty.rows[0]!, T0, T0)).toBe(-1);
  });
});
