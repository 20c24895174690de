import { formatTime } from '../app/format.ts';

const STEPS_MS = [
  10, 50, 100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000,
  7_200_000, 21_600_000, 86_400_000,
];

/** Round tick times for an axis of `widthPx` over [start, end], at most one per ~90 px. */
export function timeTicks(start: number, end: number, widthPx: number): { at: number; label: string }[] {
  const span = Math.max(1, end - start);
  const wanted = Math.max(2, Math.floor(widthPx / 90));
  const step = STEPS_MS.find((s) => span / s <= wanted) ?? STEPS_MS.at(-1)!;
  const ticks: { at: number; label: string }[] = [];
  for (let at = Math.ceil(start / step) * step; at <= end; at += step) {
    const label = step < 1000 ? formatTime(new Date(at).toISOString()) : formatTime(new Date(at).toISOString()).slice(0, 8);
    ticks.push({ at, label });
  }
  return ticks;
}
