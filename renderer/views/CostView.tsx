import { useMemo, useState } from 'react';
import type { Cost } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { formatCost, formatCount, formatDateTime } from '../app/format.ts';
import { timeTicks } from './timeAxis.ts';
import { useElementWidth } from './useElementWidth.ts';
import { useSessionQuery } from './useSessionQuery.ts';

type Usage = Pick<
  Cost['byModel'][number],
  'calls' | 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'costUsd' | 'unpricedCalls'
>;

/** A cost with the calls it leaves out said aloud: an unpriced call's cost is unknown, not $0. */
function costText(usage: Usage): string {
  if (usage.unpricedCalls === 0) return formatCost(usage.costUsd);
  if (usage.unpricedCalls === usage.calls) return 'unpriced';
  return `${formatCost(usage.costUsd)} + ${formatCount(usage.unpricedCalls)} unpriced`;
}

/** The counts and cost of one row, a model's or the total, in the table's column order. */
function UsageCells({ usage }: { readonly usage: Usage }) {
  return (
    <>
      <td className="num">{formatCount(usage.calls)}</td>
      <td className="num">{formatCount(usage.inputTokens)}</td>
      <td className="num">{formatCount(usage.outputTokens)}</td>
      <td className="num">{formatCount(usage.cacheReadTokens)}</td>
      <td className="num">{formatCount(usage.cacheWriteTokens)}</td>
      <td
        className="num"
        title={
          usage.unpricedCalls > 0 ? 'calls with no known price: a local model, or a provider or model the pricing data lacks' : undefined
        }
      >
        {costText(usage)}
      </td>
    </>
  );
}

function CostTable({ cost }: { readonly cost: Cost }) {
  const total = cost.byModel.reduce(
    (sum, row) => ({
      calls: sum.calls + row.calls,
      inputTokens: sum.inputTokens + row.inputTokens,
      outputTokens: sum.outputTokens + row.outputTokens,
      cacheReadTokens: sum.cacheReadTokens + row.cacheReadTokens,
      cacheWriteTokens: sum.cacheWriteTokens + row.cacheWriteTokens,
      costUsd: sum.costUsd + row.costUsd,
      unpricedCalls: sum.unpricedCalls + row.unpricedCalls,
    }),
    { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, unpricedCalls: 0 },
  );
  return (
    <table className="cost-table" data-testid="cost-table">
      <thead>
        <tr>
          <th>provider</th>
          <th>model</th>
          <th className="num">calls</th>
          <th className="num">input</th>
          <th className="num">output</th>
          <th className="num">cache read</th>
          <th className="num">cache write</th>
          <th className="num">cost</th>
        </tr>
      </thead>
      <tbody>
        {[...cost.byModel]
          .sort((a, b) => b.costUsd - a.costUsd)
          .map((row) => (
            <tr key={`${row.provider}/${row.model}`}>
              <td>{row.provider}</td>
              <td>{row.model}</td>
              <UsageCells usage={row} />
            </tr>
          ))}
      </tbody>
      <tfoot>
        <tr>
          <th colSpan={2}>total</th>
          <UsageCells usage={total} />
        </tr>
      </tfoot>
    </table>
  );
}

const HEIGHT = 220;
const PAD = { left: 64, right: 40, top: 12, bottom: 26 };

/** Cumulative cost as a step line: cost only moves when a model call lands. */
function CumulativeChart({ points, width }: { readonly points: Cost['cumulative']; readonly width: number }) {
  const [hover, setHover] = useState<number | null>(null);
  const chart = useMemo(() => {
    const series = points.map((p) => ({ t: Date.parse(p.at), cost: p.costUsd })).filter((p) => !Number.isNaN(p.t));
    if (series.length === 0) return null;
    const t0 = series[0]!.t;
    const t1 = Math.max(t0 + 1, series.at(-1)!.t);
    const max = Math.max(...series.map((p) => p.cost), 1e-9);
    const plotWidth = width - PAD.left - PAD.right;
    const x = (t: number) => PAD.left + ((t - t0) / (t1 - t0)) * plotWidth;
    const y = (c: number) => PAD.top + (1 - c / max) * (HEIGHT - PAD.top - PAD.bottom);
    // Thin out to about one point per pixel: the line looks the same and stays cheap.
    const step = Math.max(1, Math.floor(series.length / Math.max(1, plotWidth)));
    const kept = series.filter((_, i) => i % step === 0 || i === series.length - 1);
    let path = `M ${x(t0)} ${y(0)}`;
    for (const p of kept) path += ` H ${x(p.t)} V ${y(p.cost)}`;
    return { series, kept, path, x, y, max, ticks: timeTicks(t0, t1, plotWidth) };
  }, [points, width]);

  if (!chart) return <div className="muted pad">No model calls yet.</div>;
  const point = hover === null ? null : chart.kept[hover];
  return (
    <svg
      width={width}
      height={HEIGHT}
      className="cost-chart"
      data-testid="cost-chart"
      role="img"
      aria-label="cumulative cost over time"
      onMouseMove={(e) => {
        const left = e.currentTarget.getBoundingClientRect().left;
        const mx = e.clientX - left;
        let best = 0;
        chart.kept.forEach((p, i) => {
          if (Math.abs(chart.x(p.t) - mx) < Math.abs(chart.x(chart.kept[best]!.t) - mx)) best = i;
        });
        setHover(best);
      }}
      onMouseLeave={() => setHover(null)}
    >
      <line x1={PAD.left} x2={width - PAD.right} y1={chart.y(0)} y2={chart.y(0)} className="axis" />
      <line x1={PAD.left} x2={PAD.left} y1={PAD.top} y2={chart.y(0)} className="axis" />
      <text x={PAD.left - 6} y={chart.y(chart.max) + 4} className="axis-label" textAnchor="end">
        {formatCost(chart.max)}
      </text>
      <text x={PAD.left - 6} y={chart.y(0)} className="axis-label" textAnchor="end">
        $0
      </text>
      {chart.ticks.map((tick) => (
        <text key={tick.at} x={chart.x(tick.at)} y={HEIGHT - 8} className="axis-label" textAnchor="middle">
          {tick.label}
        </text>
      ))}
      <path d={chart.path} className="cost-line" />
      {point && (
        <g>
          <circle cx={chart.x(point.t)} cy={chart.y(point.cost)} r={4} className="cost-dot" />
          <text x={Math.min(chart.x(point.t) + 8, width - 150)} y={Math.max(chart.y(point.cost) - 8, 14)} className="axis-label">
            {formatCost(point.cost)} at {formatDateTime(new Date(point.t).toISOString()).slice(11)}
          </text>
        </g>
      )}
    </svg>
  );
}

/** Spend by provider and model, and how it accumulated over the session. */
export function CostView({ sessionId, liveVersion }: { readonly sessionId: string; readonly liveVersion: number }) {
  const api = useApi();
  const { value: cost, error } = useSessionQuery(() => api.call('sessions.cost', { id: sessionId }), [api, sessionId, liveVersion]);
  const [ref, width] = useElementWidth<HTMLDivElement>();
  return (
    <div className="chart-view" ref={ref} data-testid="cost">
      {error && <div className="error">{error}</div>}
      {cost && (
        <>
          <CostTable cost={cost} />
          <h4>cumulative cost</h4>
          {width > 0 && <CumulativeChart points={cost.cumulative} width={width} />}
        </>
      )}
    </div>
  );
}
