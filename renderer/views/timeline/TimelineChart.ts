import { tickStep, timeTicks } from '../timeAxis.ts';
import {
  densityOf,
  fitCanvas,
  paintAxis,
  paintHighlights,
  paintLanes,
  paintOverview,
  readPalette,
  barTop,
  spanBox,
  warmCanvas,
  type Box,
  type Density,
  type Palette,
} from './paintTimeline.ts';
import { describeLink, describeRange, describeRun, describeSpan } from './spanText.ts';
import { keyAction, type KeyAction } from './timelineKeys.ts';
import { barAt, barRange, laneRange, linkAt, nearestInRow, rowAt, timeAt, xOf, type Bar, type Plot } from './timelineLayout.ts';
import { ROW_HEIGHT, endOf, extentOf, spanAt, type TimelineModel } from './timelineModel.ts';
import { clampView, fitRange, followDomain, panBy, sessionDomain, zoomAround, type TimeRange } from './viewport.ts';

// The Timeline's engine, outside React: it owns the view (the time window, the lanes' scroll), the
// pointer and the keys, and paints the canvases once per animation frame at most. React renders
// the frame around it (labels, toolbar, the selection line) and hears of selections and opens.

export type Selection = { readonly kind: 'span'; readonly index: number } | { readonly kind: 'range'; readonly range: TimeRange };

export interface ChartElements {
  /** The lanes' vertical scroller; its first column holds the labels, the plot sticks beside them. */
  readonly body: HTMLElement;
  /** Focusable box over the lanes' canvases: takes the pointer and the keys. */
  readonly plot: HTMLElement;
  readonly lanes: HTMLCanvasElement;
  readonly highlights: HTMLCanvasElement;
  readonly axis: HTMLCanvasElement;
  readonly overview: HTMLElement;
  readonly overviewCanvas: HTMLCanvasElement;
  /** The visible window, marked on the overview. */
  readonly viewBox: HTMLElement;
  readonly brush: HTMLElement;
  readonly tooltip: HTMLElement;
  /** The window's times, in words. */
  readonly readout: HTMLElement;
}

export interface ChartCallbacks {
  onSelect(selection: Selection | null): void;
  /** Span `index` opened (a click, or Enter on the selection). */
  onOpen(index: number): void;
  /** A return clicked: the call, `seq`, that brought the subagent's result back. */
  onOpenReturn(seq: number): void;
}

export const LABEL_WIDTH = 230;
/** Space above the first lane and below the last, inside the lanes' scroll. */
export const LANES_PAD = 6;
const AXIS_HEIGHT = 22;
const OVERVIEW_HEIGHT = 36;
/** How far (px) a press may move and still be a click. */
const CLICK_SLOP = 4;
/** How near (px) a thin bar counts as pointed at. */
const POINTER_SLOP = 4;

type Drag =
  | { readonly mode: 'pan'; readonly x: number; readonly y: number; readonly view: TimeRange; readonly scrollTop: number; moved: boolean }
  | { readonly mode: 'range'; readonly x: number; readonly shift: boolean; moved: boolean; current: number }
  | { readonly mode: 'move-window'; readonly x: number; readonly view: TimeRange; moved: boolean }
  | { readonly mode: 'brush'; readonly x: number; moved: boolean; current: number };

interface Hover {
  readonly row: number;
  readonly bar: Bar;
}

/** What the pointer is on: a bar of a row, or a spawn or return line between lanes. */
type PointedAt = { readonly kind: 'bar'; readonly hover: Hover } | { readonly kind: 'link'; readonly link: number };

const spanKey = (model: TimelineModel, index: number): string => {
  const s = spanAt(model, index);
  return `${s.kind}:${s.seq ?? ''}:${s.start}:${s.owner}`;
};

export class TimelineChart {
  private model: TimelineModel | null = null;
  private live = false;
  private now = Date.now();
  private domain: TimeRange = { from: 0, to: 1 };
  private view: TimeRange = { from: 0, to: 1 };
  private selection: Selection | null = null;
  private hover: Hover | null = null;
  private drag: Drag | null = null;
  private bars = new Map<number, Bar[]>();
  private width = 0;
  private height = 0;
  private palette: Palette;
  private frame = 0;
  private dirty = { lanes: true, highlights: true, overview: true };
  private density: { key: string; value: Density } | null = null;
  private awaitingFirstPaint = false;
  private highlightsBlank = false;
  private readonly disposers: (() => void)[] = [];

  constructor(
    private readonly el: ChartElements,
    private readonly callbacks: ChartCallbacks,
  ) {
    this.palette = readPalette(el.plot);
    this.listen();
    // The stylesheet's colors follow the system's light or dark scheme; the canvases follow them.
    const scheme = window.matchMedia('(prefers-color-scheme: dark)');
    const recolor = (): void => {
      this.palette = readPalette(el.plot);
      this.density = null;
      this.invalidate('lanes', 'highlights', 'overview');
    };
    scheme.addEventListener('change', recolor);
    this.disposers.push(() => scheme.removeEventListener('change', recolor));
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    for (const dispose of this.disposers) dispose();
  }

  /** A new timeline (first load or a live refresh): the view and the selection carry over. */
  setModel(model: TimelineModel, live: boolean): void {
    const before = this.model;
    const selectedKey = before && this.selection?.kind === 'span' ? spanKey(before, this.selection.index) : null;
    this.model = model;
    this.live = live;
    this.now = Date.now();
    const previousDomain = this.domain;
    this.domain = this.domainNow();
    this.view = before ? followDomain(this.view, previousDomain, this.domain) : this.domain;
    this.hover = null;
    if (selectedKey !== null) {
      let index = -1;
      for (let i = 0; i < model.spans.length && index < 0; i++) if (spanKey(model, i) === selectedKey) index = i;
      this.select(index >= 0 ? { kind: 'span', index } : null);
    }
    this.invalidate('lanes', 'highlights', 'overview');
    if (!before) {
      // The first data is drawn at once, in the frame that shows the lanes' labels, not the one after.
      this.awaitingFirstPaint = true;
      cancelAnimationFrame(this.frame);
      this.paint();
    }
  }

  /** The clock moved (a live session): open spans and the session's end follow now. */
  tick(): void {
    if (!this.model || !this.live) return;
    this.now = Date.now();
    const before = this.domain;
    this.domain = this.domainNow();
    this.view = followDomain(this.view, before, this.domain);
    this.invalidate('lanes', 'highlights', 'overview');
  }

  /** The plot's size changed (the window, or the view was shown). */
  resize(): void {
    const width = this.el.body.clientWidth - LABEL_WIDTH;
    const height = this.el.body.clientHeight;
    // A hidden view measures 0: keep the last size instead of collapsing.
    if (width <= 0 || height <= 0) return;
    if (width === this.width && height === this.height) {
      // Shown again: what changed while it was hidden (a live session's clock) is drawn now.
      if (this.dirty.lanes || this.dirty.overview) this.invalidate();
      return;
    }
    this.width = width;
    this.height = height;
    this.el.plot.style.height = `${height}px`;
    this.palette = readPalette(this.el.plot);
    // Sized and warmed now, not at the first paint: a canvas's first context, pixels and font take a while.
    for (const [canvas, h] of [
      [this.el.axis, AXIS_HEIGHT],
      [this.el.lanes, height],
      [this.el.highlights, height],
      [this.el.overviewCanvas, OVERVIEW_HEIGHT],
    ] as const) {
      const ctx = fitCanvas(canvas, width, h, canvas === this.el.lanes ? this.palette.background : undefined);
      if (ctx) warmCanvas(ctx);
    }
    this.highlightsBlank = true;
    this.density = null;
    this.invalidate('lanes', 'highlights', 'overview');
  }

  setSelection(selection: Selection | null): void {
    this.select(selection);
  }

  /** Zoom in (factor < 1) or out around the middle of the view, or the selected span when it is in view. */
  zoom(factor: number): void {
    const anchor = this.selectedSpanCentre() ?? (this.view.from + this.view.to) / 2;
    this.setView(zoomAround(this.view, factor, anchor, this.domain));
  }

  fitAll(): void {
    this.setView(this.domain);
  }

  /** Zooms to the selected span or range; false when nothing is selected. */
  fitSelection(): boolean {
    const range = this.selectionRange();
    if (!range) return false;
    this.setView(fitRange(range, this.domain, this.selection?.kind === 'range' ? 0 : 0.1));
    return true;
  }

  /** Zooms to everything lane `lane` holds: an agent's work (its spawn to its return, at least) or a host's requests. */
  fitLane(lane: number): void {
    const model = this.model;
    const range = model ? laneRange(model, lane, this.openUntil()) : null;
    if (range) this.setView(fitRange(range, this.domain, 0.03));
  }

  /** The selected span's or range's time. */
  selectionRange(): TimeRange | null {
    const model = this.model;
    if (!model || !this.selection) return null;
    if (this.selection.kind === 'range') return this.selection.range;
    const span = spanAt(model, this.selection.index);
    return { from: span.start, to: endOf(span, this.openUntil()) };
  }

  private openUntil(): number {
    const model = this.model;
    if (!model) return 0;
    return this.live ? Math.max(this.now, model.end) : model.end;
  }

  private domainNow(): TimeRange {
    const model = this.model!;
    return sessionDomain(model.start, extentOf(model, this.openUntil()).to, this.live, this.now);
  }

  private plotNow(): Plot {
    return { from: this.view.from, to: this.view.to, width: this.width, openUntil: this.openUntil() };
  }

  private scrollTop(): number {
    return this.el.body.scrollTop - LANES_PAD;
  }

  private setView(view: TimeRange): void {
    const next = clampView(view, this.domain);
    // Panning against an end of the session changes nothing: nothing to draw again.
    if (next.from === this.view.from && next.to === this.view.to) return;
    this.view = next;
    this.hover = null;
    this.hideTooltip();
    this.invalidate('lanes', 'highlights', 'overview');
  }

  private select(selection: Selection | null): void {
    this.selection = selection;
    this.callbacks.onSelect(selection);
    this.invalidate('highlights');
  }

  private selectedSpanCentre(): number | null {
    const range = this.selection?.kind === 'span' ? this.selectionRange() : null;
    if (!range) return null;
    const centre = (range.from + range.to) / 2;
    return centre >= this.view.from && centre <= this.view.to ? centre : null;
  }

  private invalidate(...layers: (keyof TimelineChart['dirty'])[]): void {
    for (const layer of layers) this.dirty[layer] = true;
    if (this.frame === 0) this.frame = requestAnimationFrame(() => this.paint());
  }

  private paint(): void {
    this.frame = 0;
    const model = this.model;
    // Nothing is drawn while the view is hidden (another view of the tab, another tab); resize() catches up.
    if (!model || this.width <= 0 || this.height <= 0 || this.el.body.clientWidth === 0) return;
    const plot = this.plotNow();
    // Read before the writes below: a read after them would lay the page out again mid-frame.
    const scrollTop = this.scrollTop();
    const { lanes, highlights, overview } = this.dirty;
    this.dirty = { lanes: false, highlights: false, overview: false };
    if (lanes) {
      const ticks = timeTicks(plot.from, plot.to, plot.width);
      const axis = fitCanvas(this.el.axis, this.width, AXIS_HEIGHT);
      if (axis) paintAxis(axis, plot, AXIS_HEIGHT, ticks, this.palette);
      const ctx = fitCanvas(this.el.lanes, this.width, this.height, this.palette.background);
      if (ctx)
        this.bars = paintLanes(ctx, {
          model,
          plot,
          scrollTop,
          height: this.height,
          ticks: ticks.map((t) => t.at),
          live: this.live,
          palette: this.palette,
        });
      const data = this.el.plot.dataset;
      data.from = String(plot.from);
      data.to = String(plot.to);
      data.tickMs = String(tickStep(plot.from, plot.to, plot.width));
      this.el.readout.textContent = describeRange(plot);
    }
    if (lanes || highlights) this.paintHighlights(plot, scrollTop);
    if (overview) this.paintOverview(plot);
    if (this.awaitingFirstPaint) {
      this.awaitingFirstPaint = false;
      // Measured from the data's arrival (TimelineView marks it) to the frame that shows it.
      requestAnimationFrame(() => {
        if (performance.getEntriesByName(TIMELINE_DATA_MARK).length === 0) return;
        performance.measure(TIMELINE_FIRST_PAINT, TIMELINE_DATA_MARK);
        performance.clearMarks(TIMELINE_DATA_MARK);
      });
    }
  }

  private paintHighlights(plot: Plot, scrollTop: number): void {
    const model = this.model!;
    const hover: Box | null = this.hover
      ? { x0: this.hover.bar.x0, x1: Math.max(this.hover.bar.x1, this.hover.bar.x0 + 2), y: barTop(model.rows[this.hover.row]!, scrollTop) }
      : null;
    const selected = this.selection?.kind === 'span' ? spanBox(model, this.selection.index, plot, scrollTop) : null;
    const drag = this.drag;
    const rangeOf = (r: TimeRange) => ({ x0: xOf(plot, r.from), x1: xOf(plot, r.to) });
    const range =
      drag?.mode === 'range' && drag.moved
        ? { x0: drag.x, x1: drag.current }
        : this.selection?.kind === 'range'
          ? rangeOf(this.selection.range)
          : null;
    // Nothing to outline, and nothing was: the layer is left alone (a canvas drawn on is composited afresh).
    const blank = !hover && !selected && !range;
    if (blank && this.highlightsBlank) return;
    this.highlightsBlank = blank;
    const ctx = fitCanvas(this.el.highlights, this.width, this.height);
    if (ctx) paintHighlights(ctx, { width: this.width, height: this.height, hover, selected, range, palette: this.palette });
  }

  private paintOverview(plot: Plot): void {
    const model = this.model!;
    const key = `${model.spans.length}:${this.domain.from}:${this.domain.to}:${this.width}`;
    if (this.density?.key !== key) {
      const ctx = fitCanvas(this.el.overviewCanvas, this.width, OVERVIEW_HEIGHT);
      const value = densityOf(model, this.domain, this.width, plot.openUntil);
      this.density = { key, value };
      if (ctx) paintOverview(ctx, this.width, OVERVIEW_HEIGHT, value, this.palette);
    }
    const scale = this.width / Math.max(1, this.domain.to - this.domain.from);
    const x0 = (this.view.from - this.domain.from) * scale;
    const w = Math.max(3, (this.view.to - this.view.from) * scale);
    this.el.viewBox.style.transform = `translateX(${Math.min(x0, this.width - w)}px)`;
    this.el.viewBox.style.width = `${w}px`;
  }

  // ---- pointer and keys ----

  private listen(): void {
    const { plot, axis, overview, body } = this.el;
    const on = <K extends keyof HTMLElementEventMap>(
      target: HTMLElement,
      type: K,
      handler: (e: HTMLElementEventMap[K]) => void,
      options?: AddEventListenerOptions,
    ): void => {
      target.addEventListener(type, handler, options);
      this.disposers.push(() => target.removeEventListener(type, handler, options));
    };
    // Not passive: the wheel zooms and pans the timeline instead of scrolling the page.
    on(plot, 'wheel', (e) => this.onWheel(e, plot, false), { passive: false });
    on(axis, 'wheel', (e) => this.onWheel(e, axis, false), { passive: false });
    on(overview, 'wheel', (e) => this.onWheel(e, overview, true), { passive: false });
    on(plot, 'pointerdown', (e) => this.onPlotDown(e));
    on(plot, 'pointermove', (e) => this.onPlotMove(e));
    on(plot, 'pointerup', (e) => this.onPlotUp(e));
    on(plot, 'pointerleave', () => this.clearHover());
    on(plot, 'keydown', (e) => this.onKey(e));
    on(axis, 'pointerdown', (e) => this.onAxisDown(e));
    on(axis, 'pointermove', (e) => this.onDragMove(e, axis));
    on(axis, 'pointerup', (e) => this.onDragUp(e));
    on(overview, 'pointerdown', (e) => this.onOverviewDown(e));
    on(overview, 'pointermove', (e) => this.onDragMove(e, overview));
    on(overview, 'pointerup', (e) => this.onDragUp(e));
    on(body, 'scroll', () => {
      this.hover = null;
      this.hideTooltip();
      this.invalidate('lanes', 'highlights');
    });
  }

  private localX(e: MouseEvent, target: HTMLElement): number {
    return e.clientX - target.getBoundingClientRect().left;
  }

  private onWheel(e: WheelEvent, target: HTMLElement, overview: boolean): void {
    if (!this.model || this.width <= 0) return;
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.height : 1;
    const dx = e.deltaX * unit;
    const dy = e.deltaY * unit;
    const x = this.localX(e, target);
    const scope = overview ? this.domain : this.view;
    const msPerPx = (scope.to - scope.from) / this.width;
    if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      // Shift+wheel, or a trackpad's sideways swipe: pan.
      const px = e.shiftKey ? dy || dx : dx;
      const viewMsPerPx = (this.view.to - this.view.from) / this.width;
      this.setView(panBy(this.view, px * viewMsPerPx, this.domain));
      return;
    }
    // A pinch arrives as ctrl+wheel with small steps; a mouse wheel's notch is about 100.
    const factor = Math.exp(dy * (e.ctrlKey ? 0.01 : 0.002));
    this.setView(zoomAround(this.view, factor, scope.from + x * msPerPx, this.domain));
  }

  private onPlotDown(e: PointerEvent): void {
    if (e.button !== 0 || !this.model) return;
    this.el.plot.focus({ preventScroll: true });
    this.el.plot.setPointerCapture(e.pointerId);
    const x = this.localX(e, this.el.plot);
    this.drag = e.shiftKey
      ? { mode: 'range', x, shift: true, moved: false, current: x }
      : { mode: 'pan', x: e.clientX, y: e.clientY, view: this.view, scrollTop: this.el.body.scrollTop, moved: false };
  }

  private onPlotMove(e: PointerEvent): void {
    const drag = this.drag;
    if (!drag) return this.hoverAt(e);
    if (drag.mode === 'pan') {
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < CLICK_SLOP) return;
      drag.moved = true;
      this.el.plot.style.cursor = 'grabbing';
      const msPerPx = (drag.view.to - drag.view.from) / this.width;
      this.setView(panBy(drag.view, -dx * msPerPx, this.domain));
      this.el.body.scrollTop = drag.scrollTop - dy;
      return;
    }
    this.onDragMove(e, this.el.plot);
  }

  private onPlotUp(e: PointerEvent): void {
    const drag = this.drag;
    if (drag?.mode === 'pan') {
      this.drag = null;
      this.el.plot.style.cursor = '';
      if (!drag.moved) this.clickAt(e);
      return;
    }
    this.onDragUp(e);
  }

  private onAxisDown(e: PointerEvent): void {
    if (e.button !== 0 || !this.model) return;
    this.el.axis.setPointerCapture(e.pointerId);
    const x = this.localX(e, this.el.axis);
    this.drag = { mode: 'range', x, shift: false, moved: false, current: x };
  }

  private onOverviewDown(e: PointerEvent): void {
    if (e.button !== 0 || !this.model) return;
    this.el.overview.setPointerCapture(e.pointerId);
    const x = this.localX(e, this.el.overview);
    const box = this.el.viewBox.getBoundingClientRect();
    // A window over (nearly) the whole session leaves nothing to move it to: a drag brushes instead.
    const movable = box.width < this.width * 0.9 && e.clientX >= box.left && e.clientX <= box.right;
    this.drag = movable ? { mode: 'move-window', x, view: this.view, moved: false } : { mode: 'brush', x, moved: false, current: x };
  }

  /** Dragging a range (plot or axis), the overview's window, or a brush on the overview. */
  private onDragMove(e: PointerEvent, target: HTMLElement): void {
    const drag = this.drag;
    if (!drag || drag.mode === 'pan') return;
    const x = this.localX(e, target);
    if (!drag.moved && Math.abs(x - drag.x) < CLICK_SLOP) return;
    drag.moved = true;
    if (drag.mode === 'move-window') {
      const msPerPx = (this.domain.to - this.domain.from) / this.width;
      this.setView(panBy(drag.view, (x - drag.x) * msPerPx, this.domain));
    } else if (drag.mode === 'brush') {
      drag.current = Math.min(this.width, Math.max(0, x));
      const brush = this.el.brush;
      brush.hidden = false;
      brush.style.transform = `translateX(${Math.min(drag.x, drag.current)}px)`;
      brush.style.width = `${Math.abs(drag.current - drag.x)}px`;
    } else {
      drag.current = Math.min(this.width, Math.max(0, x));
      this.invalidate('highlights');
    }
  }

  private onDragUp(e: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    if (!drag || drag.mode === 'pan') return;
    if (drag.mode === 'brush') {
      this.el.brush.hidden = true;
      const scale = (this.domain.to - this.domain.from) / this.width;
      const at = (x: number) => this.domain.from + x * scale;
      if (drag.moved) this.setView({ from: at(Math.min(drag.x, drag.current)), to: at(Math.max(drag.x, drag.current)) });
      else {
        const width = this.view.to - this.view.from;
        const centre = at(this.localX(e, this.el.overview));
        this.setView({ from: centre - width / 2, to: centre + width / 2 });
      }
    } else if (drag.mode === 'range') {
      if (drag.moved) {
        const plot = this.plotNow();
        const a = timeAt(plot, Math.min(drag.x, drag.current));
        const b = timeAt(plot, Math.max(drag.x, drag.current));
        this.select({ kind: 'range', range: { from: a, to: b } });
      } else if (drag.shift) this.clickAt(e, true);
      this.invalidate('highlights');
    }
  }

  /** The bar, or else the spawn or return line, under a pointer event on the plot. */
  private pointedAt(e: MouseEvent): PointedAt | null {
    const model = this.model;
    if (!model) return null;
    const x = this.localX(e, this.el.plot);
    const y = e.clientY - this.el.plot.getBoundingClientRect().top + this.scrollTop();
    const row = rowAt(model, y);
    const bar = row >= 0 ? barAt(this.bars.get(row) ?? [], x, POINTER_SLOP) : null;
    if (bar) return { kind: 'bar', hover: { row, bar } };
    const link = linkAt(model, this.plotNow(), x, y, POINTER_SLOP);
    return link >= 0 ? { kind: 'link', link } : null;
  }

  private hoverAt(e: PointerEvent): void {
    const at = this.pointedAt(e);
    const hit = at?.kind === 'bar' ? at.hover : null;
    const same =
      hit && this.hover && hit.row === this.hover.row && hit.bar.first === this.hover.bar.first && hit.bar.count === this.hover.bar.count;
    if (!same && (hit || this.hover)) {
      this.hover = hit;
      this.invalidate('highlights');
    }
    this.el.plot.style.cursor = at ? 'pointer' : '';
    if (!at) return this.hideTooltip();
    const model = this.model!;
    const openUntil = this.openUntil();
    let text: { title: string; meta: string };
    if (at.kind === 'link') text = describeLink(model.links[at.link]!);
    else {
      const row = model.rows[at.hover.row]!;
      const bar = at.hover.bar;
      text =
        bar.count === 1
          ? describeSpan(model, row.spans[bar.first]!, openUntil)
          : describeRun(row.kind, bar.count, barRange(row, bar, openUntil));
    }
    const tip = this.el.tooltip;
    if (!same) {
      tip.replaceChildren();
      const title = document.createElement('div');
      title.className = 'timeline-tooltip-title';
      title.textContent = text.title;
      const meta = document.createElement('div');
      meta.className = 'timeline-tooltip-meta';
      meta.textContent = text.meta;
      tip.append(title, meta);
    }
    tip.hidden = false;
    const host = tip.offsetParent?.getBoundingClientRect() ?? { left: 0, top: 0, right: window.innerWidth };
    const left = Math.min(e.clientX - host.left + 14, host.right - host.left - tip.offsetWidth - 8);
    tip.style.transform = `translate(${Math.max(0, left)}px, ${e.clientY - host.top + 16}px)`;
  }

  private clearHover(): void {
    if (this.drag) return;
    if (this.hover) {
      this.hover = null;
      this.invalidate('highlights');
    }
    this.hideTooltip();
  }

  private hideTooltip(): void {
    this.el.tooltip.hidden = true;
  }

  /**
   * A click on a span selects it and opens it (Shift: selects only); on a run of spans, zooms to it;
   * on a return, opens the call that carried it.
   */
  private clickAt(e: MouseEvent, selectOnly = e.shiftKey): void {
    const at = this.pointedAt(e);
    const model = this.model;
    if (!at || !model) {
      this.select(null);
      return;
    }
    if (at.kind === 'link') {
      const seq = model.links[at.link]!.seq;
      if (seq !== null && !selectOnly) this.callbacks.onOpenReturn(seq);
      return;
    }
    const hit = at.hover;
    const row = model.rows[hit.row]!;
    if (hit.bar.count > 1) {
      this.setView(fitRange(barRange(row, hit.bar, this.openUntil()), this.domain, 0.05));
      return;
    }
    const index = row.spans[hit.bar.first]!;
    this.select({ kind: 'span', index });
    if (!selectOnly) this.callbacks.onOpen(index);
  }

  private onKey(e: KeyboardEvent): void {
    const action = keyAction(e);
    if (!action || !this.model) return;
    e.preventDefault();
    this.apply(action);
  }

  private apply(action: KeyAction): void {
    const model = this.model!;
    const width = this.view.to - this.view.from;
    switch (action.kind) {
      case 'zoom':
        return this.zoom(action.factor);
      case 'fit-all':
        return this.fitAll();
      case 'fit-selection':
        this.fitSelection();
        return;
      case 'fit-lane':
        if (this.selection?.kind === 'span') this.fitLane(model.rows[model.spanRow[this.selection.index]!]!.lane);
        return;
      case 'pan':
        return this.setView(panBy(this.view, action.share * width, this.domain));
      case 'edge':
        return this.setView(
          action.to === 'start'
            ? { from: this.domain.from, to: this.domain.from + width }
            : { from: this.domain.to - width, to: this.domain.to },
        );
      case 'page':
        this.el.body.scrollTop += action.step * Math.max(ROW_HEIGHT, this.height - 3 * ROW_HEIGHT);
        return;
      case 'open':
        if (this.selection?.kind === 'span') this.callbacks.onOpen(this.selection.index);
        return;
      case 'clear':
        return this.select(null);
      case 'row':
      case 'span':
        return this.step(model, action);
    }
  }

  /** ↑ ↓ [ ]: the next span to select, from the selected one or, with none, from the top of the view. */
  private step(model: TimelineModel, action: { kind: 'row' | 'span'; step: -1 | 1 }): void {
    const openUntil = this.openUntil();
    const selected = this.selection?.kind === 'span' ? this.selection.index : null;
    const centre = (this.view.from + this.view.to) / 2;
    let target = -1;
    if (selected === null) {
      // Nothing selected yet: the span nearest the middle of the view, in the first row on screen that has one.
      const firstOnScreen = Math.max(
        0,
        model.rows.findIndex((r) => r.top + ROW_HEIGHT > this.scrollTop()),
      );
      for (let r = firstOnScreen; r < model.rows.length && target < 0; r++) {
        const pos = nearestInRow(model.rows[r]!, centre, openUntil);
        if (pos >= 0) target = model.rows[r]!.spans[pos]!;
      }
    } else if (action.kind === 'span') {
      const row = model.rows[model.spanRow[selected]!]!;
      const pos = model.spanPos[selected]! + action.step;
      if (pos >= 0 && pos < row.spans.length) target = row.spans[pos]!;
    } else {
      const span = spanAt(model, selected);
      const t = (span.start + endOf(span, openUntil)) / 2;
      for (let r = model.spanRow[selected]! + action.step; r >= 0 && r < model.rows.length && target < 0; r += action.step) {
        const pos = nearestInRow(model.rows[r]!, t, openUntil);
        if (pos >= 0) target = model.rows[r]!.spans[pos]!;
      }
    }
    if (target < 0) return;
    this.select({ kind: 'span', index: target });
    this.reveal(target);
  }

  /** Scrolls and pans so span `index` is on screen, keeping the zoom unless the span is wider than the view. */
  private reveal(index: number): void {
    const model = this.model!;
    const span = spanAt(model, index);
    const end = endOf(span, this.openUntil());
    const width = this.view.to - this.view.from;
    if (span.start < this.view.from || end > this.view.to) {
      if (end - span.start > width * 0.9) this.setView(fitRange({ from: span.start, to: end }, this.domain, 0.1));
      else this.setView(panBy(this.view, (span.start + end) / 2 - (this.view.from + this.view.to) / 2, this.domain));
    }
    const top = model.rows[model.spanRow[index]!]!.top + LANES_PAD;
    const body = this.el.body;
    if (top < body.scrollTop) body.scrollTop = top - ROW_HEIGHT;
    else if (top + ROW_HEIGHT > body.scrollTop + this.height) body.scrollTop = top + 2 * ROW_HEIGHT - this.height;
  }
}

/** User Timing names: the timeline's data arriving, and the first frame painted after it. */
export const TIMELINE_DATA_MARK = 'capsem:timeline:data';
export const TIMELINE_FIRST_PAINT = 'capsem:timeline:first-paint';
