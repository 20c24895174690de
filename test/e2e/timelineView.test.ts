import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import type { Timeline } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { nearestInRow } from '../../renderer/views/timeline/timelineLayout.ts';
import { buildTimelineModel, spanAt, type ModelSpan, type TimelineModel } from '../../renderer/views/timeline/timelineModel.ts';
import { appPage, chromiumMissing, ensureRendererBuilt, launchChromium, RENDERER_OUT } from '../helpers/browserHarness.ts';
import { ClaudeCodeScript, recordClaudeCodeStory } from '../helpers/claudeCodeSession.ts';
import { liveSession, type LiveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The Timeline view in Chromium against the real core: a two-hour Claude Code session recorded
// through the pipeline (its main agent spawning subagents, tools, hosts), opened by name, zoomed
// with the wheel into one subagent's turn, which the pointer then names and a click opens; the
// keys, the overview's brush, a range dragged on the axis, panning, and a live session's open
// tool drawn up to now.

const missing = chromiumMissing();
const SHOTS = fileURLToPath(new URL('../../test-output/e2e/', import.meta.url));
const home = tempHome();
let core: AppCore;
let server: BrowserServer;
let browser: Browser;
let page: Page;
let story: SessionId;
let script: ClaudeCodeScript;
let running: LiveSession;
const pageErrors: string[] = [];

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

/** Where on the page a time falls in the plot, on the middle of row `row`. */
async function pointOf(id: string, t: number, row: number): Promise<{ x: number; y: number }> {
  const { from, to } = await shown(id);
  const plot = (await pane(id).locator('[data-testid=timeline-plot]').boundingBox())!;
  const label = (await pane(id).locator(`[data-testid=timeline-row][data-row="${row}"]`).boundingBox())!;
  return { x: plot.x + ((t - from) / (to - from)) * plot.width, y: label.y + label.height / 2 };
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

beforeAll(async () => {
  if (missing) return;
  console.log(`timeline e2e: ${ensureRendererBuilt()}`);
  mkdirSync(SHOTS, { recursive: true });
  const session = await liveSession(home, 'story-e2e');
  script = await recordClaudeCodeStory(session, { turns: 300, hours: 2, seed: 7 });
  await session.end();
  story = session.id;
  // A session still running: its agent's last call asked for a tool whose result has not come back.
  running = await liveSession(home, 'story-live');
  const live = new ClaudeCodeScript(running);
  const t = Date.now() - 90_000;
  live.turn('main', { at: t, ms: 4000, tools: [{ name: 'Bash', input: { command: 'npm test' } }] });
  live.turn('main', { at: t + 30_000, ms: 3000, tools: [{ name: 'Bash', input: { command: 'npm run build -- --watch' } }] });
  await running.recorder.settled();
  core = new AppCore({ home, liveIntervalMs: 250 });
  server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason: 'timeline e2e test', home });
  browser = await launchChromium();
  page = await appPage(browser);
  page.on('pageerror', (e) => pageErrors.push(e.message));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
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
    expect(whole.tickMs).toBeGreaterThanOrEqual(5 * 60_000);
    await shot('timeline-whole');

    // The longest call a subagent made (its requests carried X-Claude-Code-Agent-Id).
    const call = script.calls.filter((c) => c.agent !== 'main').sort((a, b) => b.end - b.start - (a.end - a.start))[0]!;
    const target = spansOf(model).findIndex((s) => s.kind === 'turn' && s.start === call.start);
    expect(target).toBeGreaterThanOrEqual(0);
    const span = spanAt(model, target);
    const row = model.spanRow[target]!;
    expect(await pane(story).locator(`[data-testid=timeline-row][data-row="${row}"]`).getAttribute('data-lane')).toBe(
      `agent:${span.owner}`,
    );

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
    // On this branch a turn opens its model call's row (the Conversation view takes it over when it lands).
    await expect.poll(() => pane(story).locator('[data-testid=view-models]').getAttribute('aria-selected')).toBe('true');
    await expect
      .poll(() => pane(story).locator('[data-view=models] [data-testid=detail-pane]').getAttribute('data-seq'))
      .toBe(String(span.seq));
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
    await expect
      .poll(() => pane(story).locator('[data-view=models] [data-testid=detail-pane]').getAttribute('data-seq'))
      .toBe(String(next.seq));
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

  it("zooms to a host's requests when its name is clicked, and to the selected span's agent with A", async () => {
    await openTimeline('story-e2e', story);
    const spans = spansOf(model);
    const github = spans.filter((s) => s.kind === 'host' && s.owner === 'github.com');
    expect(github.length).toBeGreaterThan(1);
    const first = Math.min(...github.map((s) => s.start));
    const last = Math.max(...github.map((s) => s.end));
    await pane(story).locator('[data-testid=timeline-lane][data-lane="host:github.com"]').click();
    await expect.poll(async () => (await shown(story)).to - (await shown(story)).from).toBeLessThan((last - first) * 1.1);
    const zoomed = await shown(story);
    expect(zoomed.from).toBeLessThanOrEqual(first);
    expect(zoomed.to).toBeGreaterThanOrEqual(last);

    // Back to everything, select the first lane's span nearest the middle, then A: that agent's whole work.
    const plot = pane(story).locator('[data-testid=timeline-plot]');
    await plot.focus();
    await page.keyboard.press('0');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('f');
    await page.keyboard.press('a');
    const main = spans.filter((s) => s.kind !== 'host' && s.owner === model.lanes[0]!.key.slice('agent:'.length));
    await expect.poll(async () => (await shown(story)).from).toBeLessThanOrEqual(Math.min(...main.map((s) => s.start)));
    expect((await shown(story)).to).toBeGreaterThanOrEqual(Math.max(...main.map((s) => s.end)));
  });

  it("puts each subagent's lane under the agent that spawned it, with its type, and draws its returns", async (ctx) => {
    // Needs the rules that attribute calls to agents (the timeline route): until they land every span is main's.
    if (timeline.agents.length === 1) return ctx.skip();
    await openTimeline('story-e2e', story);
    const lanes = await pane(story)
      .locator('[data-testid=timeline-lane]')
      .evaluateAll((els) =>
        els.map((e) => ({ lane: e.getAttribute('data-lane'), indent: parseFloat(getComputedStyle(e).paddingLeft), text: e.textContent })),
      );
    const agentLanes = lanes.filter((l) => l.lane?.startsWith('agent:'));
    expect(agentLanes[0]!.lane).toBe('agent:main');
    for (const agent of timeline.agents.filter((a) => a.parent !== null)) {
      const at = agentLanes.findIndex((l) => l.lane === `agent:${agent.id}`);
      const parentAt = agentLanes.findIndex((l) => l.lane === `agent:${agent.parent}`);
      expect(at).toBeGreaterThan(parentAt);
      expect(agentLanes[at]!.indent).toBeGreaterThan(agentLanes[parentAt]!.indent);
      if (agent.type) expect(agentLanes[at]!.text).toContain(agent.type);
    }
    expect(model.links.filter((l) => l.kind === 'return').length).toBe(timeline.returns.length);
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
    expect(pageErrors).toEqual([]);
  });
});
