import { useMemo, useState } from 'react';
import type { TableKind, Timeline } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { formatDuration } from '../app/format.ts';
import { timeTicks } from './timeAxis.ts';
import { useElementWidth } from './useElementWidth.ts';
import { useSessionQuery } from './useSessionQuery.ts';

type Span = Timeline['hosts'][number] | Timeline['turns'][number] | Timeline['tools'][number];

interface Bar {
  readonly x: number;
  readonly width: number;
  readonly label: string;
  readonly seq: number | null;
  readonly durationMs: number;
}

interface Lane {
  readonly name: string;
  readonly kind: TableKind;
  readonly className: string;
  readonly bars: readonly Bar[];
}

const LABEL_WIDTH = 150;
const LANE_HEIGHT = 20;
const AXIS_HEIGHT = 22;
/** Busy sessions have more hosts than fit: the busiest get lanes, the rest share one. */
const MAX_HOST_LANES = 12;

/**
 * Spans as bars in pixels. Spans closer than a pixel merge into one bar ("N spans"), so a session
 * with 100k requests draws at most one bar per pixel per lane instead of 100k SVG nodes.
 */
function toBars(spans: readonly Span[], x: (t: number) => number): Bar[] {
  const bars: { x0: number; x1: number; label: string; seq: number | null; count: number; durationMs: number }[] = [];
  const sorted = [...spans].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
  for (const span of sorted) {
    const start = Date.parse(span.start);
    const end = Math.max(start, Date.parse(span.end));
    const x0 = x(start);
    const x1 = Math.max(x0 + 2, x(end));
    const previous = bars.at(-1);
    if (previous && x0 <= previous.x1 + 1 && sorted.length > 500) {
      previous.x1 = Math.max(previous.x1, x1);
      previous.count += 1;
      previous.label = `${previous.count} spans`;
      previous.durationMs += end - start;
    } else bars.push({ x0, x1, label: span.label, seq: span.seq, count: 1, durationMs: end - start });
  }
  return bars.map((b) => ({ x: b.x0, width: b.x1 - b.x0, label: b.label, seq: b.count === 1 ? b.seq : null, durationMs: b.durationMs }));
}

function lanesOf(timeline: Timeline, x: (t: number) => number): Lane[] {
  const byHost = new Map<string, Span[]>();
  for (const span of timeline.hosts) byHost.set(span.host, [...(byHost.get(span.host) ?? []), span]);
  const hosts = [...byHost.entries()].sort((a, b) => b[1].length - a[1].length);
  const lanes: Lane[] = [
    { name: 'turns', kind: 'model', className: 'bar-turn', bars: toBars(timeline.turns, x) },
    { name: 'tools', kind: 'tool', className: 'bar-tool', bars: toBars(timeline.tools, x) },
    ...hosts
      .slice(0, MAX_HOST_LANES)
      .map(([host, spans]): Lane => ({ name: host, kind: 'net', className: 'bar-host', bars: toBars(spans, x) })),
  ];
  const rest = hosts.slice(MAX_HOST_LANES).flatMap(([, spans]) => spans);
  if (rest.length > 0)
    lanes.push({ name: `${hosts.length - MAX_HOST_LANES} other hosts`, kind: 'net', className: 'bar-host', bars: toBars(rest, x) });
  return lanes;
}

/** Turns, tool calls and hosts on one time axis; hover names a bar, click opens its row. */
export function TimelineView({
  sessionId,
  liveVersion,
  onJump,
}: {
  readonly sessionId: string;
  readonly liveVersion: number;
  readonly onJump: (kind: TableKind, seq: number) => void;
}) {
  const api = useApi();
  const { value: timeline, error } = useSessionQuery(() => api.call('sessions.timeline', { id: sessionId }), [api, sessionId, liveVersion]);
  const [ref, width] = useElementWidth<HTMLDivElement>();
  const [hover, setHover] = useState<string | null>(null);

  const drawn = useMemo(() => {
    if (!timeline?.start || !timeline.end || width === 0) return null;
    const start = Date.parse(timeline.start);
    const end = Math.max(start + 1, Date.parse(timeline.end));
    const plot = Math.max(100, width - LABEL_WIDTH - 12);
    const x = (t: number) => LABEL_WIDTH + ((t - start) / (end - start)) * plot;
    return { lanes: lanesOf(timeline, x), ticks: timeTicks(start, end, plot).map((tick) => ({ ...tick, x: x(tick.at) })) };
  }, [timeline, width]);

  return (
    <div className="chart-view" ref={ref} data-testid="timeline">
      <div className="chart-note muted">{hover ?? 'Hover a bar for its label; click to open its row.'}</div>
      {error && <div className="error">{error}</div>}
      {timeline && !timeline.start && <div className="muted pad">No events yet.</div>}
      {drawn && (
        <svg
          width={width}
          height={AXIS_HEIGHT + drawn.lanes.length * LANE_HEIGHT + 4}
          className="timeline-svg"
          role="img"
          aria-label="session timeline"
        >
          {drawn.ticks.map((tick) => (
            <g key={tick.at}>
              <line
                x1={tick.x}
                x2={tick.x}
                y1={AXIS_HEIGHT - 4}
                y2={AXIS_HEIGHT + drawn.lanes.length * LANE_HEIGHT}
                className="grid-line"
              />
              <text x={tick.x + 3} y={12} className="axis-label">
                {tick.label}
              </text>
            </g>
          ))}
          {drawn.lanes.map((lane, i) => {
            const y = AXIS_HEIGHT + i * LANE_HEIGHT;
            return (
              <g key={lane.name} data-testid="timeline-lane" data-lane={lane.name}>
                <text x={4} y={y + 14} className="lane-label">
                  {lane.name.length > 22 ? `${lane.name.slice(0, 21)}…` : lane.name}
                  <title>{lane.name}</title>
                </text>
                {lane.bars.map((bar, j) => (
                  <rect
                    key={j}
                    x={bar.x}
                    y={y + 3}
                    width={bar.width}
                    height={LANE_HEIGHT - 6}
                    rx={2}
                    className={`${lane.className}${bar.seq !== null ? ' clickable' : ''}`}
                    onMouseEnter={() => setHover(`${lane.name}: ${bar.label} (${formatDuration(bar.durationMs)})`)}
                    onMouseLeave={() => setHover(null)}
                    onClick={() => bar.seq !== null && onJump(lane.kind, bar.seq)}
                  >
                    <title>{bar.label}</title>
                  </rect>
                ))}
              </g>
            );
          })}
        </svg>
      )}
    </div>
  );
}
