import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { BrowserServer } from '../../electron/app/browserServer.ts';
import type { Timeline } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { ClaudeCodeConversation } from '../../electron/dev/claudeCodeWire.ts';
import { seedStorySession } from '../../electron/dev/seedStory.ts';
import { nearestInRow } from '../../renderer/views/timeline/timelineLayout.ts';
import { buildTimelineModel, spanAt, type ModelSpan, type TimelineModel } from '../../renderer/views/timeline/timelineModel.ts';
import { chromiumMissing, ensureRendererBuilt, openAppInChromium, type AppInChromium } from '../helpers/browserHarness.ts';
import { claudeCodeExchange } from '../helpers/exchanges.ts';
import { liveSession, type LiveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The Timeline view in Chromium against the real core: a seeded Claude Code session of 300 model
// calls recorded through the pipeline (subagents in the foreground and background, one of their
// own now and then, background jobs, returns), opened by name, zoomed with the wheel into one
// subagent's turn, which the pointer then names and a click opens in the Conversation; the keys,
// the overview's brush, a range dragged on the axis, panning, a lane's name, and a live session's
// open tool call drawn up to now.

const missing = chromiumMissing();
const SHOTS = fileURLToPath(new URL('../../test-output/e2e/', import.meta.url));
const home = tempHome();
let core: AppCore;
let server: BrowserServer;
let app: AppInChromium | undefined;
let page: Page;
let story: SessionId;
let running: LiveSession;

const spansOf = (model: TimelineModel): ModelSpan[] => Array.from({ length: model.spans.length }, (_, i) => spanAt(model, i));
const timelineOf = async (id: SessionId): Promise<Timeline> => (await core.handle('sessions.timeline', { id })) as Timeline;
const pane = (id: string) => page.locator(`[data-testid=session-pane][data-session-id="${id}"]`);

async function openTimeline(name: string, id: string): Promise<void> {
  await page.goto(server.url);
  await page.locator('[data-testid=session-row]').first().waitFor();
  await page.fill('[data-testid=session-filter]', name);
  await page.press('[data-testid=session-filter]', 'Enter');
  await pane(id).locator('[data-testid=view-timeline]').click();
  await pane(id).locator('[data-testid=timeline-plot][data-from]').waitFor();
}

/** The window the plot shows once the frames in hand are painted, and how far apart its ticks are. */
async function shown(id: string): Promise<{ from: number; to: number; tickMs: number }> {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const plot = pane(id).locator('[data-testid=timeline-plot]');
  const [from, to, tickMs] = await Promise.all(['data-from', 'data-to', 'data-tick-ms'].map((a) => plot.getAttribute(a)));
  return { from: Number(from), to: Number(to), tickMs: Number(tickMs) };
}

/** The name beside row `row`, the lanes scrolled to it first if it is off screen (names are drawn near the scroll only). */
async function revealRow(id: string, row: number) {
  const label = pane(id).locator(`[data-testid=timeline-row][data-row="${row}"]`);
  const scroller = pane(id).locator('[data-testid=timeline-lanes]');
  const scrollerBox = (await scroller.boundingBox())!;
  const labelBox = (await label.count()) > 0 ? await label.boundingBox() : null;
  if (!labelBox || labelBox.y < scrollerBox.y || labelBox.y + labelBox.height > scrollerBox.y + scrollerBox.height) {
    // Rows are at least ROW_HEIGHT (16 px) apart (lanes add gaps): scroll to about where it is, then exactly.
    await scroller.evaluate((el, r) => (el.scrollTop = Math.max(0, r * 16 - 60)), row);
    await label.waitFor();
    await label.evaluate((e) => e.scrollIntoView({ block: 'center' }));
  }
  return label;
}

/** Where on the page a time falls in the plot, on the middle of row `row` (scrolled to). */
async function pointOf(id: string, t: number, row: number): Promise<{ x: number; y: number }> {
  const label = await revealRow(id, row);
  const { from, to } = await shown(id);
  const plot = (await pane(id).locator('[data-testid=timeline-plot]').boundingBox())!;
  const box = (await label.boundingBox())!;
  return { x: plot.x + ((t - from) / (to - from)) * plot.width, y: box.y + box.height / 2 };
}

/** The Conversation view is shown, on the turn that holds timeline seq `seq` (as the API finds it), marked. */
async function expectTurnOpened(seq: number): Promise<void> {
  const { index } = (await core.handle('sessions.conversationFind', { id: story, seq, kind: null })) as { index: number | null };
  expect(index).not.toBeNull();
  await expect.poll(() => pane(story).locator('[data-testid=view-conversation]').getAttribute('aria-selected')).toBe('true');
  const turn = pane(story).locator(`[data-testid=conversation-turn][data-index="${index}"]`);
  await expect.poll(() => turn.getAttribute('class')).toContain('focused');
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

beforeAll(async () => {
  if (missing) return;
  console.log(`timeline e2e: ${ensureRendererBuilt()}`);
  mkdirSync(SHOTS, { recursive: true });
  story = (await seedStorySession(home, { turns: 300, seed: 7, name: 'story-e2e' })).id;
  // A session still running: its agent's last call asked for a tool whose result has not come back.
  running = await liveSession(home, 'story-live');
  const main = new ClaudeCodeConversation().say('Run the tests, then keep the build watching');
  const t = Date.now() - 90_000;
  const test = { id: 'toolu_01live000000000000000001', name: 'Bash', args: JSON.stringify({ command: 'npm test' }) };
  const watch = { id: 'toolu_01live000000000000000002', name: 'Bash', args: JSON.stringify({ command: 'npm run build -- --watch' }) };
  void running.recorder.record(claudeCodeExchange(main.call({ tools: [test] }), new Date(t), { durationMs: 4000 }));
  main.results([{ id: test.id, content: '12 passing' }]);
  void running.recorder.record(claudeCodeExchange(main.call({ tools: [watch] }), new Date(t + 30_000), { durationMs: 3000 }));
  await running.recorder.settled();
  core = new AppCore({ home, liveIntervalMs: 250 });
  app = await openAppInChromium(core, home, 'timeline e2e test');
  ({ server, page } = app);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await running?.end();
  core?.close();
  home.remove();
}, 30_000);

describe.skipIf(missing !== null)(`the Timeline view in Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let timeline: Timeline;
  let model: TimelineModel;

  beforeAll(async () => {
    timeline = await timelineOf(story);
    model = buildTimelineModel(timeline);
  });

  it("zooms with the wheel into a subagent's turn, names it under the pointer, and opens it on a click", async () => {
    await openTimeline('story-e2e', story);
    const whole = await shown(story);
    expect(whole.from).toBe(Date.parse(timeline.start!));
    expect(whole.to).toBe(Date.parse(timeline.end!));
    expect(whole.tickMs).toBeGreaterThanOrEqual(60_000);
    await shot('timeline-whole');

    // The longest turn of a subagent (its requests carried X-Claude-Code-Agent-Id).
    const subagents = new Set(timeline.agents.filter((a) => a.parent !== null).map((a) => a.id));
    const spans = spansOf(model);
    const target = spans
      .map((s, i) => ({ s, i }))
      .filter(({ s }) => s.kind === 'turn' && subagents.has(s.owner))
      .sort((a, b) => b.s.end - b.s.start - (a.s.end - a.s.start))[0]!.i;
    const span = spanAt(model, target);
    const row = model.spanRow[target]!;
    expect(await (await revealRow(story, row)).getAttribute('data-lane')).toBe(`agent:${span.owner}`);

    const centre = (span.start + span.end) / 2;
    const readoutBefore = await pane(story).locator('[data-testid=timeline-range]').innerText();
    for (let i = 0; i < 40; i++) {
      const { from, to } = await shown(story);
      if (to - from < (span.end - span.start) * 3) break;
      const at = await pointOf(story, centre, row);
      await page.mouse.move(at.x, at.y);
      await page.mouse.wheel(0, -240);
      await expect.poll(async () => (await shown(story)).from !== from || (await shown(story)).to !== to).toBe(true);
    }
    const zoomed = await shown(story);
    // The window narrowed around the turn (the pointer's time stayed put) and the axis went from minutes to seconds.
    expect(zoomed.to - zoomed.from).toBeLessThan((span.end - span.start) * 3);
    expect(zoomed.from).toBeLessThan(centre);
    expect(zoomed.to).toBeGreaterThan(centre);
    expect(zoomed.tickMs).toBeLessThanOrEqual(10_000);
    expect(zoomed.tickMs).toBeLessThan(whole.tickMs / 6);
    expect(await pane(story).locator('[data-testid=timeline-range]').innerText()).not.toBe(readoutBefore);
    const overview = (await pane(story).locator('[data-testid=timeline-overview]').boundingBox())!;
    const windowBox = (await pane(story).locator('[data-testid=timeline-window]').boundingBox())!;
    expect(windowBox.width).toBeLessThan(overview.width * 0.05);

    const at = await pointOf(story, centre, row);
    await page.mouse.move(at.x, at.y - 3);
    await page.mouse.move(at.x, at.y);
    const hover = pane(story).locator('[data-testid=timeline-hover]');
    await expect.poll(() => hover.isVisible()).toBe(true);
    expect(await hover.locator('.timeline-tooltip-title').innerText()).toBe(span.label);
    expect(await hover.locator('.timeline-tooltip-meta').innerText()).toMatch(/^turn · .+ · \d+(\.\d+)? s · at \d\d:\d\d:\d\d\.\d{3}$/);
    await shot('timeline-zoomed-hover');

    await page.mouse.click(at.x, at.y);
    await expectTurnOpened(span.seq!);
  });

  it('answers the keys: 0 fits all, ↓ selects a span and says it, F zooms to it, ] steps on, Enter opens it', async () => {
    await openTimeline('story-e2e', story);
    const plot = pane(story).locator('[data-testid=timeline-plot]');
    await plot.focus();
    await page.keyboard.press('+');
    await page.keyboard.press('+');
    const zoomedIn = await shown(story);
    expect(zoomedIn.to - zoomedIn.from).toBeLessThan((Date.parse(timeline.end!) - Date.parse(timeline.start!)) / 2);
    await page.keyboard.press('0');
    await expect.poll(async () => (await shown(story)).from).toBe(Date.parse(timeline.start!));
    expect((await shown(story)).to).toBe(Date.parse(timeline.end!));

    const selected = pane(story).locator('[data-testid=timeline-selected]');
    expect(await selected.getAttribute('aria-live')).toBe('polite');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => selected.locator('.timeline-detail-title').count()).toBe(1);
    const first = await selected.innerText();
    // The first span the keys reach: in the first lane, nearest the middle of the session.
    const middle = (Date.parse(timeline.start!) + Date.parse(timeline.end!)) / 2;
    const row0 = model.rows[0]!;
    const pos = nearestInRow(row0, middle, model.end);
    const nearest = spanAt(model, row0.spans[pos]!);
    expect(first).toContain(nearest.label);

    await page.keyboard.press('f');
    await expect
      .poll(async () => (await shown(story)).to - (await shown(story)).from)
      .toBeLessThan(Math.max(5, (nearest.end - nearest.start) * 1.5));
    const fitted = await shown(story);
    expect(fitted.from).toBeLessThanOrEqual(nearest.start);
    expect(fitted.to).toBeGreaterThanOrEqual(nearest.end);

    await page.keyboard.press(']');
    await expect.poll(() => selected.innerText()).not.toBe(first);
    const next = spanAt(model, row0.spans[pos + 1]!);
    expect(await selected.innerText()).toContain(next.label);
    // The view followed the selection to the next span.
    const followed = await shown(story);
    expect(followed.from).toBeLessThanOrEqual(next.end);
    expect(followed.to).toBeGreaterThanOrEqual(next.start);

    await page.keyboard.press('Enter');
    await expectTurnOpened(next.seq!);
  });

  it('pans with a drag, Shift+wheel and the arrows; brushes the overview to zoom; zooms to a range dragged on the axis', async () => {
    await openTimeline('story-e2e', story);
    const plotBox = (await pane(story).locator('[data-testid=timeline-plot]').boundingBox())!;
    const start = Date.parse(timeline.start!);
    const length = Date.parse(timeline.end!) - start;

    // The overview's brush: from a quarter to a half of the session.
    const overview = (await pane(story).locator('[data-testid=timeline-overview]').boundingBox())!;
    const oy = overview.y + overview.height / 2;
    await page.mouse.move(overview.x + overview.width * 0.25, oy);
    await page.mouse.down();
    await page.mouse.move(overview.x + overview.width * 0.4, oy, { steps: 4 });
    await page.mouse.move(overview.x + overview.width * 0.5, oy, { steps: 4 });
    await page.mouse.up();
    await expect.poll(async () => Math.abs((await shown(story)).from - (start + length * 0.25))).toBeLessThan(length * 0.01);
    const brushed = await shown(story);
    expect(Math.abs(brushed.to - (start + length * 0.5))).toBeLessThan(length * 0.01);

    // A drag on the lanes pans: dragging right shows earlier time, the width kept.
    const y = plotBox.y + 40;
    await page.mouse.move(plotBox.x + plotBox.width * 0.6, y);
    await page.mouse.down();
    await page.mouse.move(plotBox.x + plotBox.width * 0.7, y, { steps: 5 });
    await page.mouse.up();
    const width = brushed.to - brushed.from;
    await expect.poll(async () => brushed.from - (await shown(story)).from).toBeCloseTo(width * 0.1, -2);
    const dragged = await shown(story);
    expect(dragged.to - dragged.from).toBeCloseTo(width, 0);

    // Shift+wheel pans later; → pans later by 15%.
    await page.keyboard.down('Shift');
    await page.mouse.wheel(0, 200);
    await page.keyboard.up('Shift');
    await expect.poll(async () => (await shown(story)).from).toBeGreaterThan(dragged.from);
    const wheeled = await shown(story);
    expect(wheeled.to - wheeled.from).toBeCloseTo(width, 0);
    await pane(story).locator('[data-testid=timeline-plot]').focus();
    await page.keyboard.press('ArrowRight');
    await expect.poll(async () => (await shown(story)).from - wheeled.from).toBeCloseTo(width * 0.15, -2);

    // A range dragged on the axis is selected, said, and F zooms to it.
    const before = await shown(story);
    const axis = (await pane(story).locator('[data-testid=timeline-axis]').boundingBox())!;
    await page.mouse.move(axis.x + axis.width * 0.2, axis.y + axis.height / 2);
    await page.mouse.down();
    await page.mouse.move(axis.x + axis.width * 0.3, axis.y + axis.height / 2, { steps: 4 });
    await page.mouse.move(axis.x + axis.width * 0.4, axis.y + axis.height / 2, { steps: 4 });
    await page.mouse.up();
    await expect.poll(() => pane(story).locator('[data-testid=timeline-selected]').innerText()).toMatch(/^Range \d\d:\d\d:\d\d\.\d{3} – /);
    await shot('timeline-range');
    await pane(story).locator('[data-testid=timeline-plot]').focus();
    await page.keyboard.press('F');
    const bw = before.to - before.from;
    await expect.poll(async () => Math.abs((await shown(story)).from - (before.from + bw * 0.2))).toBeLessThan(bw * 0.01);
    expect(Math.abs((await shown(story)).to - (before.from + bw * 0.4))).toBeLessThan(bw * 0.01);
  });

  it("zooms to a subagent's work when its name is clicked, and to the selected span's agent with A", async () => {
    await openTimeline('story-e2e', story);
    // The subagent that did the most, and all it did: its spans and its life, spawn to return.
    const spans = spansOf(model);
    const busiest = [...model.lanes.entries()]
      .filter(([, lane]) => lane.kind === 'agent' && lane.depth > 0)
      .sort((a, b) => b[1].spanCount - a[1].spanCount)[0]!;
    const [laneIndex, lane] = busiest;
    const own = spans.filter((s, i) => s.kind !== 'host' && model.rows[model.spanRow[i]!]!.lane === laneIndex);
    const first = Math.min(...own.map((s) => s.start), lane.life?.from ?? Infinity);
    const last = Math.max(...own.map((s) => s.end), lane.life?.to ?? -Infinity);
    const whole = Date.parse(timeline.end!) - Date.parse(timeline.start!);
    expect(last - first).toBeLessThan(whole / 3);

    await pane(story)
      .locator('[data-testid=timeline-lanes]')
      .evaluate((el, top) => (el.scrollTop = Math.max(0, top - 60)), lane.top);
    await pane(story).locator(`[data-testid=timeline-lane][data-lane="${lane.key}"]`).click();
    await expect.poll(async () => (await shown(story)).to - (await shown(story)).from).toBeLessThan((last - first) * 1.1);
    const zoomed = await shown(story);
    expect(zoomed.from).toBeLessThanOrEqual(first);
    expect(zoomed.to).toBeGreaterThanOrEqual(last);
    await shot('timeline-subagent-work');

    // Shift+click selects one of its turns without opening it; 0 shows everything; A comes back to the subagent's work.
    const turn = own.find((s) => s.kind === 'turn')!;
    const index = spans.indexOf(turn);
    const at = await pointOf(story, (turn.start + turn.end) / 2, model.spanRow[index]!);
    await page.keyboard.down('Shift');
    await page.mouse.click(at.x, at.y);
    await page.keyboard.up('Shift');
    await expect.poll(() => pane(story).locator('[data-testid=timeline-selected] .timeline-detail-title').innerText()).toBe(turn.label);
    expect(await pane(story).locator('[data-testid=view-timeline]').getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('0');
    await expect.poll(async () => (await shown(story)).to - (await shown(story)).from).toBe(whole);
    await page.keyboard.press('a');
    await expect.poll(async () => (await shown(story)).from).toBe(zoomed.from);
    expect((await shown(story)).to).toBe(zoomed.to);
  });

  it("puts each subagent's lane under the agent that spawned it, indented, with its type, named as the lanes scroll by", async () => {
    await openTimeline('story-e2e', story);
    // The names are drawn for the lanes near the scroll: read them a screen at a time, top to bottom.
    const scroller = pane(story).locator('[data-testid=timeline-lanes]');
    const seen = new Map<string, { top: number; indent: number; text: string }>();
    for (let scrolled = 0; ;) {
      await shown(story);
      const lanes = await pane(story)
        .locator('[data-testid=timeline-lane]')
        .evaluateAll((els) =>
          els.map((e) => ({
            lane: e.getAttribute('data-lane')!,
            top: parseFloat((e as HTMLElement).style.top),
            indent: parseFloat(getComputedStyle(e).paddingLeft),
            text: e.textContent ?? '',
          })),
        );
      for (const { lane, ...rest } of lanes) seen.set(lane, rest);
      const { top, height, max } = await scroller.evaluate((el) => ({
        top: el.scrollTop,
        height: el.clientHeight,
        max: el.scrollHeight - el.clientHeight,
      }));
      if (top >= max) break;
      scrolled = top + height;
      await scroller.evaluate((el, to) => (el.scrollTop = to), scrolled);
    }
    expect(seen.size).toBe(model.lanes.length);
    const main = seen.get('agent:main')!;
    expect(main.top).toBe(Math.min(...[...seen.values()].map((l) => l.top)));
    const subagents = timeline.agents.filter((a) => a.parent !== null);
    expect(subagents.length).toBeGreaterThan(3);
    for (const agent of subagents) {
      const lane = seen.get(`agent:${agent.id}`)!;
      const parent = seen.get(`agent:${agent.parent}`)!;
      expect(lane.top).toBeGreaterThan(parent.top);
      expect(lane.indent).toBeGreaterThan(parent.indent);
      expect(lane.text).toContain(agent.label);
      if (agent.type) expect(lane.text).toContain(agent.type);
    }
    expect(model.links.filter((l) => l.kind === 'return').length).toBe(timeline.returns.length);
    await scroller.evaluate((el) => (el.scrollTop = 0));
    await shot('timeline-subagents');
  });

  it("draws a live session's open tool call up to now", async () => {
    await openTimeline('story-live', running.id);
    const live = await timelineOf(running.id);
    const open = live.tools.find((t) => t.open)!;
    expect(open).toBeDefined();
    const liveModel = buildTimelineModel(live);
    const index = spansOf(liveModel).findIndex((s) => s.kind === 'tool' && s.end === Infinity);
    // The window reaches now and keeps up with it.
    const first = await shown(running.id);
    expect(first.to).toBeGreaterThan(Date.now() - 5000);
    await expect.poll(async () => (await shown(running.id)).to, { timeout: 5000 }).toBeGreaterThan(first.to + 900);
    // Pointed at well after it started (a minute in), the open tool is still there, running.
    const at = await pointOf(running.id, Date.parse(open.start) + 60_000, liveModel.spanRow[index]!);
    await page.mouse.move(at.x, at.y);
    const hover = pane(running.id).locator('[data-testid=timeline-hover]');
    await expect.poll(() => hover.isVisible()).toBe(true);
    expect(await hover.locator('.timeline-tooltip-title').innerText()).toBe(open.label);
    expect(await hover.locator('.timeline-tooltip-meta').innerText()).toContain('still running');
    await shot('timeline-live');
  });

  it('raised no uncaught errors in the page', () => {
    expect(app!.pageErrors).toEqual([]);
  });
});
