const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Round steps from a millisecond to a day: 1-2-5 under a second, then the clock's own divisions. */
const STEPS_MS = [
  1,
  2,
  5,
  10,
  20,
  50,
  100,
  200,
  500,
  SECOND,
  2 * SECOND,
  5 * SECOND,
  10 * SECOND,
  15 * SECOND,
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
];

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** A tick's label, as precise as its step needs: 14:05, 14:05:30, 14:05:30.250. */
export function tickLabel(at: number, step: number): string {
  const d = new Date(at);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (step >= DAY) return `${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  if (step >= MINUTE) return hm;
  if (step >= SECOND) return `${hm}:${pad(d.getSeconds())}`;
  return `${hm}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** Labels are monospace: about 7 px a character at the axis's 11 px, plus a gap. */
const labelWidthPx = (step: number): number => tickLabel(0, step).length * 7 + 14;

/** The smallest round step whose ticks leave room for their labels over `widthPx`. */
export function tickStep(start: number, end: number, widthPx: number): number {
  const span = Math.max(1, end - start);
  return STEPS_MS.find((step) => (step / span) * widthPx >= labelWidthPx(step)) ?? STEPS_MS.at(-1)!;
}

/**
 * Round tick times for an axis of `widthPx` over [start, end], spaced so their labels fit. Steps of
 * an hour or more fall on the local clock's round hours (a zone half an hour off UTC included).
 */
export function timeTicks(start: number, end: number, widthPx: number): { at: number; label: string }[] {
  const step = tickStep(start, end, widthPx);
  const offset = step >= HOUR ? new Date(start).getTimezoneOffset() * MINUTE : 0;
  const ticks: { at: number; label: string }[] = [];
  for (let at = Math.ceil((start - offset) / step) * step + offset; at <= end; at += step) ticks.push({ at, label: tickLabel(at, step) });
  return ticks;
}
