import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { BrowserServer } from '../../electron/app/browserServer.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { AnthropicStory, bigConversation } from '../helpers/agentStory.ts';
import { chromiumMissing, ensureRendererBuilt, openAppInChromium, type AppInChromium } from '../helpers/browserHarness.ts';
import { bigSession, liveSession, type LiveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The Conversation view in Chromium (browser mode) against the real core: an ended agent session
// opens on it; a turn's prompt, its markdown answer, a long tool result opened whole, and links
// from an item to its raw exchange in the Model calls and Network views; a search hit in a model
// call opens its turn; a live session's new turns stream in.

const missing = chromiumMissing();
const SHOTS = fileURLToPath(new URL('../../test-output/e2e/', import.meta.url));
const home = tempHome();
let core: AppCore;
let server: BrowserServer;
let app: AppInChromium | undefined;
let page: Page;
let running: LiveSession;
let runningAgent: AnthropicStory;

const LONG_TURNS = 2000;
const THIRD_PROMPT = 'Now fix the failing retry test, please';
const LONG_FILE = Array.from({ length: 400 }, (_, i) => `export const line${i} = ${i}; // retry budget`).join('\n');
const read = { id: 'toolu_read', name: 'Read', args: JSON.stringify({ file_path: 'src/retry.test.ts' }) };
const edit = { id: 'toolu_edit', name: 'Edit', args: JSON.stringify({ file_path: 'src/retry.ts', old_string: '5', new_string: '3' }) };
const install = { id: 'toolu_install', name: 'Bash', args: JSON.stringify({ command: 'npm install' }) };

function idOfName(name: string): string {
  const db = openMainDb(home);
  try {
    return (db.prepare('SELECT id FROM sessions WHERE name = ?').get(name) as { id: string }).id;
  } finally {
    db.close();
  }
}

const tab = (id: string) => page.locator(`[data-testid=tab][data-session-id="${id}"]`);
const pane = (id: string) => page.locator(`[data-testid=session-pane][data-session-id="${id}"]`);
const turn = (id: string, index: number) => pane(id).locator(`[data-testid=conversation-turn][data-index="${index}"]`);

async function fresh(): Promise<void> {
  await page.goto(server.url);
  await page.locator('[data-testid=session-row]').first().waitFor();
}

async function openByName(name: string): Promise<string> {
  await page.fill('[data-testid=session-filter]', name);
  await page.press('[data-testid=session-filter]', 'Enter');
  const id = idOfName(name);
  await tab(id).waitFor();
  return id;
}

beforeAll(async () => {
  if (missing) return;
  console.log(`conversation e2e: ${ensureRendererBuilt()}`);
  mkdirSync(SHOTS, { recursive: true });
  const story = await liveSession(home, 'story-e2e');
  const agent = new AnthropicStory(story);
  await agent.call({ prompt: 'Set up the project', text: 'Installing the dependencies.', tools: [install] });
  await agent.call({ results: [{ callId: install.id, content: 'added 120 packages' }], text: 'Installed.' });
  await agent.call({
    prompt: THIRD_PROMPT,
    thinking: 'The test reads the budget from src/retry.ts.',
    text: 'Reading the test.',
    tools: [read],
  });
  await agent.call({
    results: [{ callId: read.id, content: LONG_FILE }],
    text: 'The budget is **five**; the test wants `3`. See [the docs](https://example.com/retry).\n\n- lower it\n- run the test',
    tools: [edit],
    files: ['src/retry.ts'],
  });
  await agent.call({ results: [{ callId: edit.id, content: 'edited' }], text: 'Done: MARKER-IN-ANSWER.' });
  await story.end();
  await bigSession(home, 'http-only', 20);
  await bigConversation(home, 'long-story', LONG_TURNS);
  running = await liveSession(home, 'running-agent');
  runningAgent = new AnthropicStory(running);
  await runningAgent.call({ prompt: 'Keep going', text: 'First step.' });
  await running.writer.flush();
  core = new AppCore({ home, liveIntervalMs: 250 });
  app = await openAppInChromium(core, home, 'conversation e2e test');
  ({ server, page } = app);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await running?.end();
  core?.close();
  home.remove();
}, 30_000);

describe.skipIf(missing !== null)(`the Conversation in Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('opens an ended agent session on its Conversation, an ended one without model calls on Network, a running one on its terminal', async () => {
    await fresh();
    const story = await openByName('story-e2e');
    expect(await pane(story).locator('[data-testid=view-conversation]').getAttribute('aria-selected')).toBe('true');
    await expect.poll(() => pane(story).locator('[data-testid=conversation-count]').innerText()).toBe('5 turns');
    await page.click('[data-testid=tab-list]');
    const plain = await openByName('http-only');
    expect(await pane(plain).locator('[data-testid=view-network]').getAttribute('aria-selected')).toBe('true');
    await page.click('[data-testid=tab-list]');
    const live = await openByName('running-agent');
    expect(await pane(live).locator('[data-testid=view-terminal]').getAttribute('aria-selected')).toBe('true');
  });

  it("reads turn 3's prompt and the markdown answer, opens a long tool result whole, and follows links to the raw exchange", async () => {
    await fresh();
    const id = await openByName('story-e2e');
    const third = turn(id, 2);
    await third.waitFor();
    expect(await third.locator('[data-testid=turn-prompt] pre').innerText()).toBe(THIRD_PROMPT);
    // Turns that only carried results back say no prompt of their own.
    expect(await turn(id, 1).locator('[data-testid=turn-prompt]').count()).toBe(0);
    // Thinking is folded until asked for.
    const thinking = third.locator('[data-testid=turn-thinking]');
    expect(await thinking.getAttribute('data-open')).toBe('false');
    await thinking.locator('[data-testid=turn-thinking-toggle]').click();
    await expect.poll(() => thinking.locator('pre').innerText()).toBe('The test reads the budget from src/retry.ts.');

    // The Read call's result is long: its first lines, then the whole file on asking.
    const result = third.locator('[data-testid=tool-call][data-call-id=toolu_read] [data-testid=result-text]');
    expect(await result.getAttribute('data-open')).toBe('false');
    expect(await result.locator('pre').innerText()).not.toContain('line399');
    await result.locator('[data-testid=result-text-toggle]').click();
    await expect.poll(() => result.getAttribute('data-open')).toBe('true');
    expect(await result.locator('pre').innerText()).toBe(LONG_FILE);

    const fourth = turn(id, 3);
    await fourth.scrollIntoViewIfNeeded();
    const answer = fourth.locator('[data-testid=turn-text]');
    expect(await answer.locator('strong').innerText()).toBe('five');
    expect(await answer.locator('li').allInnerTexts()).toEqual(['lower it', 'run the test']);
    // A link in the model's text is not one: it cannot navigate the window.
    expect(await answer.locator('a').count()).toBe(0);
    expect(await answer.locator('.md-link').getAttribute('title')).toBe('https://example.com/retry');
    expect(await fourth.locator('[data-testid=turn-file]').allInnerTexts()).toEqual([expect.stringContaining('src/retry.ts')]);
    await page.screenshot({ path: join(SHOTS, 'conversation-story.png') });

    // The result's link: the model call that carried it back, in Model calls with its detail open.
    const resultLink = third.locator('[data-testid=tool-call][data-call-id=toolu_read] [data-testid=result-link]');
    const carried = (await resultLink.getAttribute('data-seq'))!;
    expect(carried).toBe(await fourth.locator('[data-testid=turn-link]').getAttribute('data-seq'));
    await resultLink.click();
    expect(await pane(id).locator('[data-testid=view-models]').getAttribute('aria-selected')).toBe('true');
    const modelDetail = pane(id).locator('[data-view=models] [data-testid=detail-pane]');
    await expect.poll(() => modelDetail.getAttribute('data-seq')).toBe(carried);
    await modelDetail.locator('[data-testid=model-items]').waitFor();

    // The turn's exchange: the HTTPS request that carried it, in Network.
    await pane(id).locator('[data-testid=view-conversation]').click();
    const exchange = turn(id, 2).locator('[data-testid=turn-net-link]');
    const netSeq = (await exchange.getAttribute('data-seq'))!;
    await exchange.click();
    const netDetail = pane(id).locator('[data-view=network] [data-testid=detail-pane]');
    await expect.poll(() => netDetail.getAttribute('data-seq')).toBe(netSeq);
    await expect.poll(() => netDetail.locator('table.kv').first().innerText()).toContain('/v1/messages');
  });

  it('opens the turn of a search hit in a model call', async () => {
    await fresh();
    const id = await openByName('story-e2e');
    await pane(id).locator('[data-testid=view-network]').click();
    await pane(id).locator('[data-testid=session-search]').fill('MARKER-IN-ANSWER');
    await pane(id).locator('[data-testid=session-search]').press('Enter');
    const hit = pane(id).locator('[data-testid=search-hit][data-kind=model]');
    await hit.click();
    expect(await pane(id).locator('[data-testid=view-conversation]').getAttribute('aria-selected')).toBe('true');
    await expect.poll(() => turn(id, 4).getAttribute('class')).toContain('focused');
    expect(await turn(id, 4).locator('[data-testid=turn-text]').innerText()).toContain('MARKER-IN-ANSWER');
  });

  it('jumps to a turn far down a long session, drawn where it belongs', async () => {
    await fresh();
    const id = await openByName('long-story');
    await expect.poll(() => pane(id).locator('[data-testid=conversation-count]').innerText()).toBe('2000 turns');
    await pane(id).locator('[data-testid=session-search]').fill('Turn 1500.');
    await pane(id).locator('[data-testid=session-search]').press('Enter');
    await pane(id).locator('[data-testid=search-hit][data-kind=model]').click();
    const far = turn(id, 1500);
    await expect.poll(() => far.getAttribute('class')).toContain('focused');
    expect(await far.locator('[data-testid=turn-text] strong').innerText()).toBe('Turn 1500.');
    // In view, at the top of the list, once the turns around it are measured.
    await expect
      .poll(async () => {
        const list = (await pane(id).locator('[data-testid=conversation-scroll]').boundingBox())!;
        const box = (await far.boundingBox())!;
        return box.y >= list.y - 1 && box.y < list.y + 40;
      })
      .toBe(true);
  });

  it("streams a live session's new turns in", async () => {
    await fresh();
    const id = await openByName('running-agent');
    await pane(id).locator('[data-testid=view-conversation]').click();
    await expect.poll(() => pane(id).locator('[data-testid=conversation-count]').innerText()).toBe('1 turn');
    await runningAgent.call({ prompt: 'And the next one', text: 'Second step.' });
    await running.writer.flush();
    await expect.poll(() => pane(id).locator('[data-testid=conversation-count]').innerText(), { timeout: 10_000 }).toBe('2 turns');
    await expect.poll(() => turn(id, 1).locator('[data-testid=turn-prompt] pre').innerText()).toBe('And the next one');
  });

  it('raised no uncaught errors in the page', () => {
    expect(app!.pageErrors).toEqual([]);
  });
});
