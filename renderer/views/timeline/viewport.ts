/** A stretch of time in epoch milliseconds: the whole session, or the part of it on screen. */
export interface TimeRange {
  readonly from: number;
  readonly to: number;
}

/** The narrowest view: a few milliseconds across the plot, where single requests are wide bars. */
export const MIN_VIEW_MS = 5;

const widthOf = (r: TimeRange): number => r.to - r.from;

/** The view kept inside the session and no narrower than MIN_VIEW_MS nor wider than the session. */
export function clampView(view: TimeRange, domain: TimeRange): TimeRange {
  const width = Math.min(widthOf(domain), Math.max(MIN_VIEW_MS, widthOf(view)));
  const from = Math.min(Math.max(view.from, domain.from), domain.to - width);
  return { from, to: from + width };
}

/** Zoomed by `factor` (under 1 zooms in) around `anchor`, which stays where it is on screen. */
export function zoomAround(view: TimeRange, factor: number, anchor: number, domain: TimeRange): TimeRange {
  const width = Math.min(widthOf(domain), Math.max(MIN_VIEW_MS, widthOf(view) * factor));
  const share = widthOf(view) > 0 ? (anchor - view.from) / widthOf(view) : 0.5;
  const from = anchor - share * width;
  return clampView({ from, to: from + width }, domain);
}

/** Moved later by `ms` (earlier when negative), stopping at the session's ends. */
export function panBy(view: TimeRange, ms: number, domain: TimeRange): TimeRange {
  return clampView({ from: view.from + ms, to: view.to + ms }, domain);
}

/** A view showing `range` with a margin of `margin` of its width each side (a point gets MIN_VIEW_MS around it). */
export function fitRange(range: TimeRange, domain: TimeRange, margin = 0.08): TimeRange {
  const width = Math.max(MIN_VIEW_MS, widthOf(range) * (1 + 2 * margin));
  const middle = (range.from + range.to) / 2;
  return clampView({ from: middle - width / 2, to: middle + width / 2 }, domain);
}

/**
 * The session's time as drawn: from its first event to its last, or to `now` while it runs, never
 * narrower than a second (a session of one request still has an axis to zoom in).
 */
export function sessionDomain(start: number, end: number, live: boolean, now: number): TimeRange {
  const to = Math.max(end, live ? now : end, start + 1000);
  return { from: start, to };
}

/**
 * The view after the session grew (a live session): one that showed the end keeps showing it,
 * sliding with it, so a person watching the newest spans keeps watching them; any other stays put.
 */
export function followDomain(view: TimeRange, before: TimeRange, after: TimeRange): TimeRange {
  const atEnd = view.to >= before.to - widthOf(view) * 0.005;
  if (!atEnd) return clampView(view, after);
  const showedAll = view.from <= before.from + widthOf(view) * 0.005;
  if (showedAll) return after;
  return clampView({ from: after.to - widthOf(view), to: after.to }, after);
}
