/** One benchmark figure against its target, printed the same way by every benchmark. */
export interface Figure {
  readonly label: string;
  readonly value: string;
  readonly pass: boolean;
  readonly target: string;
}

export function figure(label: string, value: string, pass: boolean, target: string): Figure {
  return { label, value, pass, target };
}

export function printFigures(title: string, figures: readonly Figure[]): boolean {
  console.log(`\n== ${title}`);
  const width = Math.max(...figures.map((f) => f.label.length));
  for (const f of figures)
    console.log(`  ${f.label.padEnd(width)}  ${f.value.padEnd(34)} ${f.pass ? 'PASS' : 'FAIL'} (target ${f.target})`);
  return figures.every((f) => f.pass);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * One path's figure over another's, round by round: paths timed side by side share the machine's
 * drift (its speed moves by 2x between seconds), so the median of these is the comparison.
 */
export function roundRatios(values: readonly number[], against: readonly number[]): number[] {
  return values.map((x, round) => x / against[round]!);
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Samples RSS every 25 ms until stopped; returns the peak in MiB. */
export function rssSampler(): { stop: () => number } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss) / (1 << 20);
    },
  };
}
