/** Left-aligned text columns, as a terminal list should look; numbers are right-aligned. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  rightAligned: readonly number[] = [],
): string {
  return tablePages(headers, rightAligned).page(rows);
}

/**
 * A table printed a page of rows at a time, for results too large to hold: the columns take the
 * widths of the header and the first page, and widen (never narrow) for a later page that needs it.
 * The first page begins with the header line.
 */
export function tablePages(
  headers: readonly string[],
  rightAligned: readonly number[] = [],
): { page(rows: readonly (readonly string[])[]): string } {
  const widths = headers.map((h) => h.length);
  let first = true;
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (rightAligned.includes(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return {
    page(rows) {
      // A loop, not Math.max(...column): spreading a large result overflows the stack.
      for (const row of rows) headers.forEach((_h, i) => (widths[i] = Math.max(widths[i]!, (row[i] ?? '').length)));
      const lines = rows.map(line);
      if (first) lines.unshift(line(headers));
      first = false;
      return lines.join('\n');
    },
  };
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

/** MM-DD HH:MM:SS in local time, the format the spec's list uses. */
export function formatCreated(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function formatCost(usd: number): string {
  return `$${usd.toFixed(usd >= 100 ? 2 : 4)}`;
}

export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof Uint8Array) return `<blob ${value.byteLength} B>`;
  const text = String(value).replace(/[\r\n\t]+/g, ' ');
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
