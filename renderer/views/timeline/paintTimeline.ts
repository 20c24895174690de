import { rowBars, visibleRows, xOf, type Bar, type Plot } from './timelineLayout.ts';
import {
  BAR_HEIGHT,
  ROW_HEIGHT,
  SECTION_HEIGHT,
  SPAN_KINDS,
  endOf,
  spanAt,
  visibleEnd,
  type Row,
  type SpanKind,
  type TimelineModel,
} from './timelineModel.ts';
import type { TimeRange } from './viewport.ts';

// Painting on canvas: the lanes (bars, subagent lives, spawns and returns), the highlight layer
// (hover, selection, a dragged range), the time axis and the overview strip. Colors come from the
// stylesheet's --tl-* variables, so light and dark follow the rest of the window.

export interface Palette {
  /** Behind the lanes (their canvas is opaque). */
  readonly background: string;
  readonly turn: string;
  readonly tool: string;
  readonly job: string;
  readonly host: string;
  readonly error: string;
  readonly spawn: string;
  readonly return: string;
  readonly life: string;
  readonly laneShade: string;
  readonly grid: string;
  readonly text: string;
  readonly textDim: string;
  readonly barText: string;
  readonly now: string;
  readonly selection: string;
  readonly range: string;
}

export function readPalette(element: Element): Palette {
  const style = getComputedStyle(element);
  const v = (name: string): string => style.getPropertyValue(name).trim() || '#888';
  return {
    background: v('--bg'),
    turn: v('--tl-turn'),
    tool: v('--tl-tool'),
    job: v('--tl-job'),
    host: v('--tl-host'),
    error: v('--tl-error'),
    spawn: v('--tl-spawn'),
    return: v('--tl-return'),
    life: v('--tl-life'),
    laneShade: v('--tl-lane-shade'),
    grid: v('--tl-grid'),
    text: v('--fg'),
    textDim: v('--fg-2'),
    barText: v('--tl-bar-text'),
    now: v('--tl-now'),
    selection: v('--tl-selection'),
    range: v('--tl-range'),
  };
}

const FONT = '10px ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace';
const CHAR_PX = 6.1;
const BAR_INSET = (ROW_HEIGHT - BAR_HEIGHT) / 2;

/** Top edge of a row's bars on the lanes' canvas. */
export const barTop = (row: Row, scrollTop: number): number => row.top - scrollTop + BAR_INSET;

const colorOf = (kind: SpanKind, p: Palette): string =>
  kind === 'turn' ? p.turn : kind === 'tool' ? p.tool : kind === 'job' ? p.job : p.host;

/** `text` cut to what fits in `px` pixels, or null when not even a few characters do. */
function fitted(text: string, px: number): string | null {
  const chars = Math.floor((px - 6) / CHAR_PX);
  if (chars < 3) return null;
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}

/**
 * Draws and wipes a glyph and a bar: the first text drawn on a canvas looks its font up and the
 * first fill sets up its pixels, tens of milliseconds that are better spent before the data comes.
 */
export function warmCanvas(ctx: CanvasRenderingContext2D): void {
  ctx.font = FONT;
  ctx.fillText('0:', 0, 10);
  ctx.fillRect(0, 0, 2, 2);
  ctx.clearRect(0, 0, 20, 20);
}

/**
 * A canvas sized to its box in CSS pixels, drawn in CSS pixels at the screen's density, cleared,
 * or filled with `background` (an opaque canvas: it costs less to put on screen every frame).
 */
export function fitCanvas(canvas: HTMLCanvasElement, width: number, height: number, background?: string): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(width * dpr));
  const h = Math.max(1, Math.round(height * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext('2d', { alpha: background === undefined });
  if (!ctx) return null;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (background === undefined) ctx.clearRect(0, 0, width, height);
  else {
    ctx.fillStyle = background;
    ctx.fillRect(0, 0, width, height);
  }
  return ctx;
}

export interface LanesFrame {
  readonly model: TimelineModel;
  readonly plot: Plot;
  /** Scroll of the lanes, in pixels, and the height shown. */
  readonly scrollTop: number;
  readonly height: number;
  readonly ticks: readonly number[];
  /** The session runs: a line marks now. */
  readonly live: boolean;
  readonly palette: Palette;
}

/** Middle of a lane's first row, in canvas pixels. */
const laneMiddle = (model: TimelineModel, lane: number, scrollTop: number): number =>
  model.rows[model.lanes[lane]!.firstRow]!.top + ROW_HEIGHT / 2 - scrollTop;

/**
 * Spawns (faint) and returns (bright) as vertical lines at their time, from the lane they leave to
 * the lane they reach, with a head there and a dot where they leave. Lines landing on the same
 * pixel column are drawn once, from the highest end to the lowest: a session of a thousand
 * subagents has a thousand spawns crossing the view zoomed out (dashed, they took 200 ms a frame).
 */
function paintLinks(ctx: CanvasRenderingContext2D, f: LanesFrame): void {
  const { model, plot, scrollTop, palette, height } = f;
  const columns = { spawn: new Map<number, [number, number]>(), return: new Map<number, [number, number]>() };
  const marks = { spawn: new Path2D(), return: new Path2D() };
  // Heads and dots drawn once a pixel: zoomed out, a thousand spawns leave main at a few points.
  const marked = new Set<number>();
  const once = (kind: number, x: number, y: number): boolean => {
    const key = (Math.round(y) * 8192 + Math.round(x)) * 4 + kind;
    if (marked.has(key)) return false;
    marked.add(key);
    return true;
  };
  const onScreen = (y: number): boolean => y > -8 && y < height + 8;
  const clip = (y: number): number => Math.min(height + 10, Math.max(-10, y));
  for (const link of model.links) {
    if (link.at < plot.from || link.at > plot.to) continue;
    const y0 = laneMiddle(model, link.fromLane, scrollTop);
    const y1 = laneMiddle(model, link.toLane, scrollTop);
    if (Math.max(y0, y1) < 0 || Math.min(y0, y1) > height) continue;
    const x = Math.round(xOf(plot, link.at)) + 0.5;
    const column = columns[link.kind].get(x);
    const top = clip(Math.min(y0, y1));
    const bottom = clip(Math.max(y0, y1));
    columns[link.kind].set(x, column ? [Math.min(column[0], top), Math.max(column[1], bottom)] : [top, bottom]);
    const mark = marks[link.kind];
    const dir = y1 > y0 ? 1 : -1;
    const kindCode = link.kind === 'spawn' ? 0 : 2;
    if (onScreen(y1) && once(kindCode + (dir > 0 ? 0 : 1), x, y1)) {
      // The head points into the agent the link reaches: the spawned one, or the one returned to.
      mark.moveTo(x, y1);
      mark.lineTo(x - 4, y1 - dir * 6);
      mark.lineTo(x + 4, y1 - dir * 6);
      mark.closePath();
    }
    // Where it leaves, a small square (cheaper to fill than a round dot, a thousand at a time).
    if (onScreen(y0) && once(kindCode, x, y0 + 0.25)) mark.rect(x - 1.5, y0 - 1.5, 3, 3);
  }
  for (const kind of ['spawn', 'return'] as const) {
    const color = kind === 'return' ? palette.return : palette.spawn;
    const lines = new Path2D();
    for (const [x, [top, bottom]] of columns[kind]) {
      lines.moveTo(x, top);
      lines.lineTo(x, bottom);
    }
    ctx.lineWidth = kind === 'return' ? 1.25 : 1;
    ctx.globalAlpha = kind === 'return' ? 1 : 0.55;
    ctx.strokeStyle = color;
    ctx.stroke(lines);
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.fill(marks[kind]);
  }
}

/** Paints the lanes and returns the bars it drew, by row, for the pointer to find. */
export function paintLanes(ctx: CanvasRenderingContext2D, f: LanesFrame): Map<number, Bar[]> {
  const { model, plot, scrollTop, height, palette } = f;
  const drawn = new Map<number, Bar[]>();
  ctx.font = FONT;
  ctx.textBaseline = 'middle';

  // Every other lane shaded, and a subagent's life (spawn to return) behind its rows.
  model.lanes.forEach((lane, i) => {
    const top = lane.top - scrollTop;
    if (top > height || top + lane.height < 0) return;
    if (i % 2 === 1) {
      ctx.fillStyle = palette.laneShade;
      ctx.fillRect(0, top - 3, plot.width, lane.height + 6);
    }
    if (lane.life) {
      const from = lane.life.from ?? plot.from;
      const to = lane.life.to ?? plot.openUntil;
      const x0 = Math.max(0, xOf(plot, from));
      const x1 = Math.min(plot.width, xOf(plot, to));
      if (x1 > x0) {
        ctx.fillStyle = palette.life;
        ctx.fillRect(x0, top - 2, x1 - x0, lane.height + 4);
      }
    }
  });
  ctx.strokeStyle = palette.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of f.ticks) {
    const x = Math.round(xOf(plot, t)) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, height);
  }
  ctx.stroke();
  if (model.hostsTop !== null) {
    const y = model.hostsTop - scrollTop + SECTION_HEIGHT / 2;
    ctx.fillStyle = palette.grid;
    ctx.fillRect(0, Math.round(y), plot.width, 1);
  }

  const [first, last] = visibleRows(model, scrollTop, height);
  for (let r = first; r < last; r++) {
    const row = model.rows[r]!;
    const bars = rowBars(row, plot);
    drawn.set(r, bars);
    const y = barTop(row, scrollTop);
    const color = colorOf(row.kind, palette);
    for (const bar of bars) {
      const x0 = Math.max(-2, bar.x0);
      // A span wide enough keeps a pixel's gap at its end, so back-to-back calls read as calls, not a block.
      const end = bar.count === 1 && bar.x1 - bar.x0 > 4 ? bar.x1 - 1 : bar.x1;
      const x1 = Math.min(plot.width + 2, Math.max(end, bar.x0 + (bar.count === 1 ? 2 : 1)));
      const failures = row.failed[bar.first + bar.count]! - row.failed[bar.first]!;
      ctx.fillStyle = failures > 0 && bar.count === 1 ? palette.error : color;
      ctx.fillRect(x0, y, x1 - x0, BAR_HEIGHT);
      // A run hiding a failure shows it as a red cap; an open span as a bright tail at now.
      if (failures > 0 && bar.count > 1) {
        ctx.fillStyle = palette.error;
        ctx.fillRect(x0, y, x1 - x0, 3);
      }
      if (row.ends[bar.first + bar.count - 1] === Infinity) {
        ctx.fillStyle = palette.now;
        ctx.fillRect(x1 - 2, y - 1, 2, BAR_HEIGHT + 2);
      }
      const text =
        x1 - x0 > 30
          ? fitted(bar.count === 1 ? model.spans.wire[row.spans[bar.first]!]!.label : `${bar.count} ${row.kind}s`, x1 - Math.max(0, x0))
          : null;
      if (text) {
        ctx.fillStyle = palette.barText;
        ctx.fillText(text, Math.max(0, x0) + 3, y + BAR_HEIGHT / 2 + 0.5);
      }
    }
  }
  paintLinks(ctx, f);
  if (f.live && plot.openUntil >= plot.from && plot.openUntil <= plot.to) {
    const x = Math.round(xOf(plot, plot.openUntil)) - 0.5;
    ctx.fillStyle = palette.now;
    ctx.fillRect(x, 0, 1, height);
  }
  return drawn;
}

/** A box on the lanes' canvas, to outline. */
export interface Box {
  readonly x0: number;
  readonly x1: number;
  readonly y: number;
}

/** The box of span `index` of the model (its row and times), in canvas pixels. */
export function spanBox(model: TimelineModel, index: number, plot: Plot, scrollTop: number): Box {
  const span = spanAt(model, index);
  const row = model.rows[model.spanRow[index]!]!;
  const x0 = xOf(plot, span.start);
  return { x0, x1: Math.max(x0 + 2, xOf(plot, endOf(span, plot.openUntil))), y: barTop(row, scrollTop) };
}

export interface HighlightFrame {
  readonly width: number;
  readonly height: number;
  readonly hover: Box | null;
  readonly selected: Box | null;
  /** A dragged range, in plot pixels. */
  readonly range: { readonly x0: number; readonly x1: number } | null;
  readonly palette: Palette;
}

export function paintHighlights(ctx: CanvasRenderingContext2D, f: HighlightFrame): void {
  if (f.range) {
    const x0 = Math.min(f.range.x0, f.range.x1);
    const x1 = Math.max(f.range.x0, f.range.x1);
    ctx.fillStyle = f.palette.range;
    ctx.fillRect(x0, 0, x1 - x0, f.height);
    ctx.fillStyle = f.palette.selection;
    ctx.fillRect(Math.round(x0), 0, 1, f.height);
    ctx.fillRect(Math.round(x1), 0, 1, f.height);
  }
  const outline = (box: Box, width: number): void => {
    const x0 = Math.max(-3, box.x0) - 1.5;
    const x1 = Math.min(f.width + 3, box.x1) + 1.5;
    ctx.lineWidth = width;
    ctx.strokeRect(x0, box.y - 1.5, x1 - x0, BAR_HEIGHT + 3);
  };
  ctx.strokeStyle = f.palette.text;
  if (f.hover) outline(f.hover, 1);
  ctx.strokeStyle = f.palette.selection;
  if (f.selected) outline(f.selected, 2);
}

export function paintAxis(
  ctx: CanvasRenderingContext2D,
  plot: Plot,
  height: number,
  ticks: readonly { at: number; label: string }[],
  palette: Palette,
): void {
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  ctx.fillStyle = palette.grid;
  ctx.fillRect(0, height - 1, plot.width, 1);
  for (const tick of ticks) {
    const x = Math.round(xOf(plot, tick.at));
    ctx.fillStyle = palette.textDim;
    ctx.fillRect(x, height - 6, 1, 6);
    ctx.fillText(tick.label, x + 3, height / 2 - 2);
  }
}

/** How busy each pixel column of the overview is: spans of agents, and of hosts, running there. */
export interface Density {
  readonly agents: Float32Array;
  readonly hosts: Float32Array;
  readonly max: number;
}

export function densityOf(model: TimelineModel, domain: TimeRange, width: number, openUntil: number): Density {
  const columns = Math.max(1, Math.floor(width));
  const agents = new Float32Array(columns + 1);
  const hosts = new Float32Array(columns + 1);
  const scale = columns / Math.max(1, domain.to - domain.from);
  const col = (t: number): number => Math.min(columns - 1, Math.max(0, Math.floor((t - domain.from) * scale)));
  // Running counts by differences: +1 where a span starts, -1 past where it ends.
  const { kinds, starts, ends } = model.spans;
  const host = SPAN_KINDS.indexOf('host');
  for (let i = 0; i < model.spans.length; i++) {
    const target = kinds[i] === host ? hosts : agents;
    const start = starts[i]!;
    target[col(start)]! += 1;
    target[col(visibleEnd(start, ends[i]!, openUntil)) + 1]! -= 1;
  }
  let max = 1;
  for (let c = 1; c <= columns; c++) {
    agents[c]! += agents[c - 1]!;
    hosts[c]! += hosts[c - 1]!;
  }
  for (let c = 0; c < columns; c++) max = Math.max(max, agents[c]!, hosts[c]!);
  return { agents, hosts, max };
}

export function paintOverview(ctx: CanvasRenderingContext2D, width: number, height: number, density: Density, palette: Palette): void {
  const half = height / 2;
  // Square root, so a quiet hour still shows beside a burst of a hundred parallel requests.
  const scale = (n: number): number => (n <= 0 ? 0 : Math.max(1, Math.sqrt(n / density.max) * (half - 2)));
  // Each series one filled outline (agents above the middle, hosts below), not a rectangle a column.
  const outline = (series: Float32Array, sign: number, color: string): void => {
    ctx.beginPath();
    ctx.moveTo(0, half);
    for (let c = 0; c < series.length - 1; c++) {
      const y = half - sign * scale(series[c]!);
      ctx.lineTo(c, y);
      ctx.lineTo(c + 1, y);
    }
    ctx.lineTo(series.length - 1, half);
    ctx.closePath();
    ctx.fillStyle = color;
    ctx.fill();
  };
  outline(density.agents, 1, palette.turn);
  outline(density.hosts, -1, palette.host);
}
