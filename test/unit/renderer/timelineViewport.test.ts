import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyAction } from '../../../renderer/views/timeline/timelineKeys.ts';
import {
  clampView,
  fitRange,
  followDomain,
  MIN_VIEW_MS,
  panBy,
  sessionDomain,
  zoomAround,
} from '../../../renderer/views/timeline/viewport.ts';
import { tickLabel, tickStep, timeTicks } from '../../../renderer/views/timeAxis.ts';

// Zooming and panning the Timeline's window, its axis's ticks at every zoom, and its keys.

const HOUR = 3_600_000;
const T0 = Date.parse('2025-03-03T08:00:00.000Z');
const session = { from: T0, to: T0 + 12 * HOUR };

describe('the time window', () => {
  it('zooms around the pointer: the time under it stays where it was on screen', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0.2, max: 5, noNaN: true }),
        fc.integer({ min: 0, max: 11 * HOUR }),
        (share, factor, offset) => {
          const view = { from: T0 + offset, to: T0 + offset + HOUR };
          const anchor = view.from + share * HOUR;
          const zoomed = zoomAround(view, factor, anchor, session);
          expect(zoomed.to - zoomed.from).toBeCloseTo(Math.min(12 * HOUR, HOUR * factor), 3);
          // Unless an end of the session stops it.
          if (zoomed.from > session.from && zoomed.to < session.to)
            expect((anchor - zoomed.from) / (zoomed.to - zoomed.from)).toBeCloseTo(share, 6);
          expect(zoomed.from).toBeGreaterThanOrEqual(session.from);
          expect(zoomed.to).toBeLessThanOrEqual(session.to);
        },
      ),
    );
  });

  it('goes no narrower than a few milliseconds, no wider than the session, never past its ends', () => {
    expect(zoomAround({ from: T0, to: T0 + 10 }, 0.01, T0 + 5, session)).toEqual({
      from: T0 + 5 - MIN_VIEW_MS / 2,
      to: T0 + 5 + MIN_VIEW_MS / 2,
    });
    expect(zoomAround({ from: T0 + HOUR, to: T0 + 2 * HOUR }, 100, T0, session)).toEqual(session);
    expect(panBy({ from: T0 + HOUR, to: T0 + 2 * HOUR }, -5 * HOUR, session)).toEqual({ from: T0, to: T0 + HOUR });
    expect(panBy({ from: T0 + HOUR, to: T0 + 2 * HOUR }, 50 * HOUR, session)).toEqual({ from: session.to - HOUR, to: session.to });
    expect(clampView({ from: T0 - HOUR, to: T0 + 20 * HOUR }, session)).toEqual(session);
  });

  it('fits a span or a range with a margin, and a point with the narrowest window', () => {
    expect(fitRange({ from: T0 + HOUR, to: T0 + 2 * HOUR }, session, 0.1)).toEqual({ from: T0 + 0.9 * HOUR, to: T0 + 2.1 * HOUR });
    expect(fitRange({ from: T0 + HOUR, to: T0 + HOUR }, session).to - fitRange({ from: T0 + HOUR, to: T0 + HOUR }, session).from).toBe(
      MIN_VIEW_MS,
    );
  });

  it('keeps following the end of a live session when it showed the end, and stays put when it did not', () => {
    const before = sessionDomain(T0, T0 + HOUR, true, T0 + HOUR);
    const after = sessionDomain(T0, T0 + HOUR, true, T0 + HOUR + 1000);
    expect(after.to).toBe(T0 + HOUR + 1000);
    expect(followDomain(before, before, after)).toEqual(after);
    expect(followDomain({ from: T0 + 0.5 * HOUR, to: T0 + HOUR }, before, after)).toEqual({
      from: T0 + 0.5 * HOUR + 1000,
      to: T0 + HOUR + 1000,
    });
    expect(followDomain({ from: T0, to: T0 + 0.5 * HOUR }, before, after)).toEqual({ from: T0, to: T0 + 0.5 * HOUR });
    expect(sessionDomain(T0, T0, false, T0 + HOUR)).toEqual({ from: T0, to: T0 + 1000 });
  });
});

describe('the time axis', () => {
  it('has round ticks whose labels fit, from milliseconds to hours', () => {
    for (const span of [8, 60, 900, 5000, 40_000, 10 * 60_000, HOUR, 12 * HOUR, 3 * 24 * HOUR]) {
      for (const width of [300, 1170, 2400]) {
        const step = tickStep(T0, T0 + span, width);
        const ticks = timeTicks(T0 + 3, T0 + 3 + span, width);
        const label = ticks[0]?.label ?? tickLabel(T0, step);
        // Labels (7 px a character) never touch; a window's width of axis has two ticks or more until the steps run out.
        expect((step / span) * width, `${span} ms over ${width} px`).toBeGreaterThanOrEqual(label.length * 7 + 14);
        expect(ticks.length, `${span} ms over ${width} px`).toBeGreaterThanOrEqual(step < 24 * HOUR && width >= 1000 ? 2 : 1);
        for (const tick of ticks) {
          expect(tick.at).toBeGreaterThanOrEqual(T0 + 3);
          expect(tick.at).toBeLessThanOrEqual(T0 + 3 + span);
        }
        for (let k = 1; k < ticks.length; k++) expect(ticks[k]!.at - ticks[k - 1]!.at).toBe(step);
      }
    }
    expect(tickStep(T0, T0 + 10, 1000)).toBe(1);
    expect(tickStep(T0, T0 + 12 * HOUR, 1170)).toBe(HOUR);
  });

  it('labels as precisely as the step: milliseconds under a second, seconds under a minute, else minutes', () => {
    const at = new Date(2025, 2, 3, 14, 5, 30, 250).getTime();
    expect(tickLabel(at, 50)).toBe('14:05:30.250');
    expect(tickLabel(at, 5000)).toBe('14:05:30');
    expect(tickLabel(at, 300_000)).toBe('14:05');
    expect(tickLabel(at, HOUR)).toBe('14:05');
  });

  it('puts hour ticks on the local clock', () => {
    for (const tick of timeTicks(T0 + 1234, T0 + 12 * HOUR, 1170)) expect(new Date(tick.at).getMinutes()).toBe(0);
  });
});

describe('the keys', () => {
  const press = (key: string, mods: Partial<Record<'shiftKey' | 'ctrlKey' | 'metaKey' | 'altKey', boolean>> = {}) =>
    keyAction({ key, shiftKey: false, ctrlKey: false, metaKey: false, altKey: false, ...mods });

  it('zoom, fit, pan, step through spans and open them', () => {
    expect(press('+')).toMatchObject({ kind: 'zoom' });
    expect((press('+') as { factor: number }).factor).toBeLessThan(1);
    expect((press('-') as { factor: number }).factor).toBeGreaterThan(1);
    expect(press('0')).toEqual({ kind: 'fit-all' });
    expect(press('f')).toEqual({ kind: 'fit-selection' });
    expect(press('F', { shiftKey: true })).toEqual({ kind: 'fit-selection' });
    expect(press('a')).toEqual({ kind: 'fit-lane' });
    expect(press('ArrowLeft')).toEqual({ kind: 'pan', share: -0.15 });
    expect(press('ArrowRight', { shiftKey: true })).toEqual({ kind: 'pan', share: 0.8 });
    expect(press('ArrowDown')).toEqual({ kind: 'row', step: 1 });
    expect(press(']')).toEqual({ kind: 'span', step: 1 });
    expect(press('Enter')).toEqual({ kind: 'open' });
    expect(press('Escape')).toEqual({ kind: 'clear' });
  });

  it("leave the browser's and the window's chords alone", () => {
    expect(press('0', { ctrlKey: true })).toBeNull();
    expect(press('f', { metaKey: true })).toBeNull();
    expect(press('ArrowLeft', { altKey: true })).toBeNull();
    expect(press('q')).toBeNull();
  });
});
