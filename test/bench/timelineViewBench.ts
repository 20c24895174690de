import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer } from '../../electron/app/browserServer.ts';
import { cpus, loadavg } from 'node:os';
import type { Timeline } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { seedStorySession } from '../../electron/dev/seedStory.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';
import { TIMELINE_FIRST_PAINT } from '../../renderer/views/timeline/TimelineChart.ts';
import { BarePage } from '../helpers/barePage.ts';
import { chromiumMissing, ensureRendererBuilt, RENDERER_OUT } from '../helpers/browserHarness.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { figure, median, percentile, printFigures, type Figure } from './report.ts';

// The Timeline view of a 10,000-turn Claude Code session (some 12 hours) in Chromium (the real renderer
// in browser mode, over the real core): how soon the first frame shows it once the timeline's data
// has arrived (the view's own User Timing measure), and the main thread's time per frame while the
// wheel zooms from the whole session to seconds and back and pans (frames driven in the page, each
// timed from its animation-frame callbacks to the end of its rendering work). The baseline is the
// same frame measured with nothing to draw, in the same run.

const TURNS = 10_000;
const PAINT_ROUNDS = 5;
const FIRST_PAINT_TARGET_MS = 300;
const FRAME_P95_TARGET_MS = 16;

export interface TimelineViewFigures {
  readonly firstPaintMs: readonly number[];
  /** Main-thread time of each frame while zooming and panning, and of idle frames for the baseline. */
  readonly frameMs: readonly number[];
  readonly idleFrameMs: readonly number[];
  readonly spans: number;
}

// The scripts run in the page are text: tsx (which runs the benchmarks) names functions with a
// helper that exists only in Node, and a function handed to page.evaluate would carry its calls.

/** Resolves with the duration of the view's first-paint measure once it is there. */
const FIRST_PAINT_SCRIPT = `new Promise((resolve, reject) => {
  const until = performance.now() + 10000;
  const look = () => {
    const entry = performance.getEntriesByName(${JSON.stringify(TIMELINE_FIRST_PAINT)}).at(-1);
    if (entry) resolve(entry.duration);
    else if (performance.now() > until) reject(new Error('no first-paint measure'));
    else requestAnimationFrame(look);
  };
  look();
})`;

/** Opens session `id`'s tab from a freshly loaded list, then its Timeline; resolves with the first-paint measure. */
async function openTimeline(page: BarePage, url: string, id: string): Promise<number> {
  await page.goto(url);
  await page.waitFor('[data-testid=session-row]');
  await page.click(`[data-testid=session-row][data-session-id="${id}"]`);
  const pane = `[data-testid=session-pane][data-session-id="${id}"]`;
  // The tab opens on the story (or the network, for a session with no model calls): its first page in, as a person sees it before switching.
  await page.waitFor(`${pane} [data-testid=conversation-turn], ${pane} [data-testid=net-row]`);
  await page.click(`${pane} [data-testid=view-timeline]`);
  await page.waitFor(`${pane} [data-testid=timeline-plot][data-from]`, 60_000);
  return page.evaluate<number>(FIRST_PAINT_SCRIPT);
}

/**
 * `frames` frames in the page, each timed from the start of its animation-frame callbacks to the
 * end of its rendering (a message posted then runs once the frame's style, layout and paint are
 * done). With `drive`, each frame first sends the plot one wheel event of a tour in quarters: zoom
 * in at a point wandering across the plot (from the whole session to some 25 ms), pan later with
 * Shift+wheel, zoom back out to the whole, then zoom in and pan earlier by turns; only the frames
 * whose window moved count (a notch past an end of the session draws nothing).
 */
async function timeFrames(page: BarePage, frames: number, drive: boolean): Promise<number[]> {
  return page.evaluate<number[]>(`new Promise((resolve) => {
    const frames = ${frames};
    const drive = ${drive};
    const plot = document.querySelector('[data-testid=timeline-plot]');
    const box = plot.getBoundingClientRect();
    const times = [];
    const channel = new MessageChannel();
    let started = 0;
    let seen = 0;
    let window = plot.dataset.from + ' ' + plot.dataset.to;
    channel.port1.onmessage = () => {
      const now = plot.dataset.from + ' ' + plot.dataset.to;
      if (!drive || now !== window) times.push(performance.now() - started);
      window = now;
      seen += 1;
      if (seen >= frames) resolve(times);
    };
    const wheel = (i) => {
      const quarter = Math.floor((i / frames) * 4);
      const x = box.left + box.width * (0.2 + (0.6 * ((i * 7) % 50)) / 50);
      const y = box.top + Math.min(box.height - 10, 40 + ((i * 13) % 200));
      const zoomIn = quarter === 0 || (quarter === 3 && i % 60 < 30);
      const pan = quarter === 1 ? 60 : quarter === 3 && !zoomIn ? -60 : 0;
      const deltaY = pan || (zoomIn ? -60 : 60);
      return new WheelEvent('wheel', { clientX: x, clientY: y, deltaY, shiftKey: pan !== 0, bubbles: true, cancelable: true });
    };
    let i = 0;
    const frame = () => {
      if (i >= frames) return;
      requestAnimationFrame(frame);
      started = performance.now();
      if (drive) plot.dispatchEvent(wheel(i));
      i += 1;
      channel.port2.postMessage(null);
    };
    requestAnimationFrame(frame);
  })`);
}

/** Figures for session `id` of `home`, through a browser server of its own, in a page no DevTools client instruments (barePage.ts). */
export async function measureTimelineView(home: CapsemHome, id: SessionId): Promise<TimelineViewFigures> {
  ensureRendererBuilt();
  const core = new AppCore({ home });
  const server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason: 'timeline view bench', home });
  const page = await BarePage.open('about:blank');
  try {
    const timeline = (await core.handle('sessions.timeline', { id })) as Timeline;
    const firstPaintMs: number[] = [];
    for (let round = 0; round < PAINT_ROUNDS; round++) firstPaintMs.push(await openTimeline(page, server.url, id));
    const idleFrameMs = await timeFrames(page, 120, false);
    const frameMs = await timeFrames(page, 480, true);
    return {
      firstPaintMs,
      frameMs,
      idleFrameMs,
      spans: timeline.turns.length + timeline.tools.length + timeline.jobs.length + timeline.hosts.length,
    };
  } finally {
    await page.close();
    await server.close();
    core.close();
  }
}

export function timelineViewFigures(f: TimelineViewFigures, turns: number): Figure[] {
  const paint = median(f.firstPaintMs);
  const p95 = percentile(f.frameMs, 95);
  const idle = percentile(f.idleFrameMs, 95);
  return [
    figure(
      `first paint, ${turns.toLocaleString('en')} turns (${f.spans.toLocaleString('en')} spans)`,
      `${paint.toFixed(0)} ms median (max ${Math.max(...f.firstPaintMs).toFixed(0)} of ${f.firstPaintMs.length})`,
      paint <= FIRST_PAINT_TARGET_MS,
      `≤ ${FIRST_PAINT_TARGET_MS} ms after the data arrives`,
    ),
    figure(
      'frame time, zooming and panning',
      `p95 ${p95.toFixed(1)} ms, p50 ${median(f.frameMs).toFixed(1)}, max ${Math.max(...f.frameMs).toFixed(1)} (${f.frameMs.length} drawn)`,
      p95 <= FRAME_P95_TARGET_MS,
      `p95 ≤ ${FRAME_P95_TARGET_MS} ms`,
    ),
    figure(
      '  against an idle frame',
      `${(p95 / Math.max(0.1, idle)).toFixed(1)}x (idle p95 ${idle.toFixed(1)} ms)`,
      true,
      'baseline, reported',
    ),
  ];
}

/** `npm run bench -- story-timeline`: its own seeded 10,000-turn Claude Code session (electron/dev/seedStory.ts). */
export async function timelineViewBench(): Promise<boolean> {
  const missing = chromiumMissing();
  if (missing) {
    console.log(`\n== timeline view: skipped, ${missing}`);
    return true;
  }
  const home = tempHome();
  try {
    const started = performance.now();
    const session = await seedStorySession(home, { turns: TURNS, seed: 7 });
    console.log(
      `timeline view: seeded a ${TURNS.toLocaleString('en')}-turn Claude Code session in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const figures = await measureTimelineView(home, session.id);
    // Wall-clock figures on a shared machine: what else ran beside them says how far to trust them.
    console.log(`timeline view: load average ${loadavg()[0]!.toFixed(1)} over the last minute, on ${cpus().length} cores`);
    return printFigures('timeline view (Chromium)', timelineViewFigures(figures, TURNS));
  } finally {
    home.remove();
  }
}
