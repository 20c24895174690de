import { memo, useCallback, useEffect, useId, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { TableKind } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { formatCount, formatDuration } from '../app/format.ts';
import { describeRange, describeSpan } from './timeline/spanText.ts';
import { LABEL_WIDTH, LANES_PAD, TIMELINE_DATA_MARK, TimelineChart, type Selection } from './timeline/TimelineChart.ts';
import { TIMELINE_HELP, ZOOM_STEP } from './timeline/timelineKeys.ts';
import { visibleRows } from './timeline/timelineLayout.ts';
import { buildTimelineModel, ROW_HEIGHT, SECTION_HEIGHT, spanAt, type TimelineModel } from './timeline/timelineModel.ts';
import { useSessionQuery } from './useSessionQuery.ts';

interface Props {
  readonly sessionId: string;
  readonly liveVersion: number;
  /** The session runs: open spans reach to now, and a view showing the end follows it. */
  readonly live: boolean;
  /** A turn, tool call, job or return opened (a click, or Enter on the selection): its timeline seq, for the Conversation to show its turn. */
  readonly onOpenTurn: (seq: number) => void;
  /** A host's request opened: its row in the Network view. */
  readonly onJump: (kind: TableKind, seq: number) => void;
}

/**
 * The session as its agents' story on one time axis: a lane per agent (subagents under the agent
 * that spawned them), their turns, tool calls and background jobs, spawns and returns between
 * lanes, and the hosts below. Drawn on canvas, zoomable from the whole session to milliseconds.
 */
export function TimelineView({ sessionId, liveVersion, live, onOpenTurn, onJump }: Props) {
  const api = useApi();
  const { value: timeline, error } = useSessionQuery(
    () =>
      api.call('sessions.timeline', { id: sessionId }).then((t) => {
        // One mark at a time: the chart measures its first paint from it.
        performance.clearMarks(TIMELINE_DATA_MARK);
        performance.mark(TIMELINE_DATA_MARK);
        return t;
      }),
    [api, sessionId, liveVersion],
  );
  const model = useMemo(() => (timeline?.start ? buildTimelineModel(timeline) : null), [timeline]);
  // The frame (canvases, their contexts) is up before the data arrives, so its arrival costs only the drawing.
  return (
    <div className="timeline-view" data-testid="timeline">
      {error && <div className="error pad">{error}</div>}
      {timeline && !timeline.start ? (
        <div className="muted pad">No events yet.</div>
      ) : (
        <TimelineFrame model={model} live={live} onOpenTurn={onOpenTurn} onJump={onJump} />
      )}
    </div>
  );
}

function TimelineFrame({
  model,
  live,
  onOpenTurn,
  onJump,
}: { readonly model: TimelineModel | null } & Omit<Props, 'sessionId' | 'liveVersion'>) {
  const body = useRef<HTMLDivElement>(null);
  const plot = useRef<HTMLDivElement>(null);
  const lanes = useRef<HTMLCanvasElement>(null);
  const highlights = useRef<HTMLCanvasElement>(null);
  const axis = useRef<HTMLCanvasElement>(null);
  const overview = useRef<HTMLDivElement>(null);
  const overviewCanvas = useRef<HTMLCanvasElement>(null);
  const viewBox = useRef<HTMLDivElement>(null);
  const brush = useRef<HTMLDivElement>(null);
  const tooltip = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLSpanElement>(null);
  const chart = useRef<TimelineChart | null>(null);
  const modelRef = useRef(model);
  const [selection, setSelection] = useState<Selection | null>(null);
  const [band, setBand] = useState(0);
  const helpId = useId();

  const open = useCallback(
    (index: number) => {
      const model = modelRef.current;
      const span = model && index < model.spans.length ? spanAt(model, index) : null;
      if (!span || span.seq === null) return;
      if (span.kind === 'host') onJump('net', span.seq);
      else onOpenTurn(span.seq);
    },
    [onJump, onOpenTurn],
  );
  const openRef = useRef(open);
  const openTurnRef = useRef(onOpenTurn);
  useEffect(() => {
    openRef.current = open;
    openTurnRef.current = onOpenTurn;
  }, [open, onOpenTurn]);

  // Layout effects, this one first: the chart exists before the next one hands it the model.
  useLayoutEffect(() => {
    const instance = new TimelineChart(
      {
        body: body.current!,
        plot: plot.current!,
        lanes: lanes.current!,
        highlights: highlights.current!,
        axis: axis.current!,
        overview: overview.current!,
        overviewCanvas: overviewCanvas.current!,
        viewBox: viewBox.current!,
        brush: brush.current!,
        tooltip: tooltip.current!,
        readout: readout.current!,
      },
      { onSelect: setSelection, onOpen: (index) => openRef.current(index), onOpenReturn: (seq) => openTurnRef.current(seq) },
    );
    chart.current = instance;
    const observer = new ResizeObserver(() => instance.resize());
    observer.observe(body.current!);
    // The labels follow the scroll a band at a time (React renders them only when the band changes).
    const scroller = body.current!;
    const onScroll = (): void => setBand(Math.floor(scroller.scrollTop / LABEL_BAND_PX) * LABEL_BAND_PX);
    scroller.addEventListener('scroll', onScroll, { passive: true });
    instance.resize();
    return () => {
      observer.disconnect();
      scroller.removeEventListener('scroll', onScroll);
      instance.dispose();
      chart.current = null;
    };
  }, []);

  // The canvas is drawn in the same task as the labels beside it, before the frame.
  useLayoutEffect(() => {
    modelRef.current = model;
    if (model) chart.current?.setModel(model, live);
  }, [model, live]);

  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => chart.current?.tick(), 1000);
    return () => clearInterval(timer);
  }, [live]);

  const fitLane = useCallback((lane: number) => chart.current?.fitLane(lane), []);
  const agents = model?.lanes.filter((l) => l.kind === 'agent').length ?? 0;
  const counts = model ? `${agents} agent${agents === 1 ? '' : 's'} · ${formatCount(model.turns)} turns` : '';

  return (
    <>
      <div className="timeline-toolbar">
        <button type="button" title="Zoom in (+)" aria-label="Zoom in" onClick={() => chart.current?.zoom(1 / ZOOM_STEP)}>
          +
        </button>
        <button type="button" title="Zoom out (−)" aria-label="Zoom out" onClick={() => chart.current?.zoom(ZOOM_STEP)}>
          −
        </button>
        <button type="button" title="Show the whole session (0)" onClick={() => chart.current?.fitAll()} data-testid="timeline-fit-all">
          Fit all
        </button>
        <button
          type="button"
          title="Zoom to the selected span or range (F)"
          disabled={selection === null}
          onClick={() => chart.current?.fitSelection()}
          data-testid="timeline-fit-selection"
        >
          Zoom to selection
        </button>
        <span className="timeline-readout" ref={readout} data-testid="timeline-range" />
        <span className="spacer" />
        <Legend />
      </div>
      <div className="timeline-axis-row">
        <div className="timeline-corner muted" style={{ width: LABEL_WIDTH }}>
          {counts}
        </div>
        <canvas ref={axis} className="timeline-axis" data-testid="timeline-axis" aria-hidden="true" />
      </div>
      <div className="timeline-body" ref={body} data-testid="timeline-lanes">
        <div className="timeline-content" style={{ height: (model?.height ?? 0) + 2 * LANES_PAD }}>
          {model ? (
            <LaneLabels model={model} band={band} onFit={fitLane} />
          ) : (
            <div className="timeline-loading muted">Loading the timeline…</div>
          )}
          <div
            className="timeline-plot"
            ref={plot}
            tabIndex={0}
            role="application"
            aria-roledescription="timeline"
            aria-label="Session timeline"
            aria-describedby={helpId}
            data-testid="timeline-plot"
            style={{ marginLeft: LABEL_WIDTH }}
          >
            <canvas ref={lanes} aria-hidden="true" />
            <canvas ref={highlights} className="timeline-highlights" aria-hidden="true" />
          </div>
        </div>
      </div>
      <div className="timeline-overview-row">
        <div className="timeline-corner muted" style={{ width: LABEL_WIDTH }}>
          {model && `whole session · ${formatDuration(model.end - model.start)}`}
        </div>
        <div className="timeline-overview" ref={overview} data-testid="timeline-overview">
          <canvas ref={overviewCanvas} aria-hidden="true" />
          <div className="timeline-window" ref={viewBox} data-testid="timeline-window" />
          <div className="timeline-brush" ref={brush} hidden />
        </div>
      </div>
      <SelectionLine model={model} live={live} selection={selection} onOpen={open} onFit={() => chart.current?.fitSelection()} />
      <div id={helpId} className="timeline-help">
        {TIMELINE_HELP}
      </div>
      <div className="timeline-tooltip" ref={tooltip} data-testid="timeline-hover" hidden />
    </>
  );
}

function Legend() {
  return (
    <span className="timeline-legend" aria-hidden="true">
      {(['turn', 'tool', 'job', 'host', 'return', 'error'] as const).map((kind) => (
        <span key={kind} className="timeline-legend-item">
          <i className={`timeline-swatch swatch-${kind}`} />
          {kind === 'host' ? 'request' : kind === 'job' ? 'background job' : kind}
        </span>
      ))}
    </span>
  );
}

/** The labels are drawn for the scrolled-to stretch of lanes in steps of this many pixels, with as much again each side. */
const LABEL_BAND_PX = 400;

/**
 * The lanes' names (the subagent tree indented, with its type) and each row's caption, beside the
 * canvas, for the lanes near the scroll only: a session of a thousand subagents has thousands. A
 * name zooms to its lane's spans when clicked (the A key does it for the selected span's).
 */
const LaneLabels = memo(function LaneLabels({
  model,
  band,
  onFit,
}: {
  readonly model: TimelineModel;
  /** The first pixel of the lanes' scroll to label, a multiple of LABEL_BAND_PX. */
  readonly band: number;
  readonly onFit: (lane: number) => void;
}) {
  const top = band - LABEL_BAND_PX - LANES_PAD;
  const height = 4 * LABEL_BAND_PX;
  const [firstRow, lastRow] = visibleRows(model, top, height);
  const lanes = model.lanes.flatMap((lane, index) => (lane.top + lane.height > top && lane.top < top + height ? [{ lane, index }] : []));
  return (
    <div className="timeline-labels" style={{ width: LABEL_WIDTH }}>
      {model.hostsTop !== null && (
        <div className="timeline-section" style={{ top: model.hostsTop + LANES_PAD, height: SECTION_HEIGHT }}>
          hosts
        </div>
      )}
      {lanes.map(({ lane, index }) => (
        <div
          key={lane.key}
          className={`timeline-lane lane-${lane.kind}`}
          data-testid="timeline-lane"
          data-lane={lane.key}
          role="button"
          tabIndex={-1}
          onClick={() => onFit(index)}
          style={{ top: lane.top + LANES_PAD, height: ROW_HEIGHT, paddingLeft: 6 + lane.depth * 14 }}
          title={`${lane.label}${lane.type ? ` (${lane.type})` : ''}: ${lane.spanCount} spans; click to zoom to them`}
        >
          {lane.depth > 0 && <span className="timeline-branch">└</span>}
          <span className="timeline-lane-name">{lane.label}</span>
          {lane.type && <span className="timeline-lane-type">{lane.type}</span>}
        </div>
      ))}
      {model.rows.slice(firstRow, lastRow).map((row, k) => (
        <div
          key={firstRow + k}
          className="timeline-row"
          data-testid="timeline-row"
          data-row={firstRow + k}
          data-lane={model.lanes[row.lane]!.key}
          data-kind={row.kind}
          style={{ top: row.top + LANES_PAD, height: ROW_HEIGHT }}
        >
          {row.caption}
        </div>
      ))}
    </div>
  );
});

/** The selected span or range in words, announced as it changes, with what can be done with it. */
function SelectionLine({
  model,
  live,
  selection,
  onOpen,
  onFit,
}: {
  readonly model: TimelineModel | null;
  readonly live: boolean;
  readonly selection: Selection | null;
  readonly onOpen: (index: number) => void;
  readonly onFit: () => void;
}) {
  let content: ReactNode = <span className="muted">Nothing selected. {TIMELINE_HELP.split('. ')[0]}.</span>;
  if (model && selection?.kind === 'span') {
    const span = spanAt(model, selection.index);
    const text = describeSpan(model, selection.index, live ? Date.now() : model.end);
    content = (
      <>
        <span className="timeline-detail-title">{text.title}</span>
        <span className="muted"> · {text.meta}</span>
        {span.seq !== null && (
          <button type="button" className="link" onClick={() => onOpen(selection.index)} data-testid="timeline-open">
            {span.kind === 'host' ? 'Open request' : 'Open turn'} (Enter)
          </button>
        )}
      </>
    );
  } else if (selection?.kind === 'range') {
    content = (
      <>
        <span className="timeline-detail-title">Range {describeRange(selection.range)}</span>
        <button type="button" className="link" onClick={onFit}>
          Zoom to it (F)
        </button>
      </>
    );
  }
  return (
    <div className="timeline-detail" data-testid="timeline-selected" aria-live="polite">
      {content}
    </div>
  );
}
