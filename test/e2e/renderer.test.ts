import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { BrowserServer } from '../../electron/app/browserServer.ts';
import type { CallName, CallParams, CallResult } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths } from '../../electron/store/paths.ts';
import { registerSession, releaseName } from '../../electron/store/registry.ts';
import { rollUpSession } from '../../electron/store/rollup.ts';
import { openSessionDbReadOnly } from '../../electron/store/sessionDb.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import type { ImageProgress } from '../../electron/vm/image/guestImage.ts';
import type { BuildStage } from '../../electron/contract/buildStages.ts';
import { PtyTranscript } from '../../electron/vm/ptyTranscript.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import {
  type AppInChromium,
  chromiumMissing,
  ensureRendererBuilt,
  EventDoor,
  frameStats,
  openAppInChromium,
} from '../helpers/browserHarness.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { bigSession, liveSession, now } from '../helpers/sessionFixture.ts';
import { capturedBody, httpsExchange } from '../helpers/exchanges.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The real renderer in Chromium (browser mode), driven by Playwright against the real core and
// UI server in this process, over a seeded CAPSEM_HOME: what a person sees in the list, opening a
// session by name, two sessions with one name, a 100,000-row table (first paint and scrolling,
// measured in the page), a gzip body in the detail pane, a live terminal on a real pty (the guest
// agent run on the host), export, import (file picker and drop), Resume of an ended named
// session, app.open, and a screenshot of every main view.

const missing = chromiumMissing();
const agentMissing = missing ? null : buildAgent();
const SHOTS = fileURLToPath(new URL('../../test-output/e2e/', import.meta.url));
const GZ_JSON = { hello: 'world', nested: { list: [1, 2, 3] }, note: 'sent gzip on the wire' };
const BIG_ROWS = 100_000;
/** Lines of a recorded terminal long enough to take several replay chunks. */
const LONG_REPLAY_LINES = 12_000;

const home = tempHome();
let core: AppCore;
let door: EventDoor;
let server: BrowserServer;
let vmHost: VmHost | null = null;
let app: AppInChromium | undefined;
let page: Page;
let big: SessionId;
let gz: SessionId;
/** Stands in for the guest image's build in the next starts (the host agent needs no image): reports progress, waits, or fails. */
let imageBuild: ((onProgress: (p: ImageProgress) => void) => Promise<void>) | null = null;

function call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
  return core.handle(name, params) as Promise<CallResult<N>>;
}

function idOfName(name: string): string {
  const db = openMainDb(home);
  try {
    const rows = db.prepare('SELECT id FROM sessions WHERE name = ?').all(name) as { id: string }[];
    if (rows.length !== 1) throw new Error(`${rows.length} sessions are named ${name}`);
    return rows[0]!.id;
  } finally {
    db.close();
  }
}

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** A fresh page on the list (tabs are page state, so every test starts from none). */
async function fresh(extraQuery = ''): Promise<Page> {
  await page.goto(`${server.url}${extraQuery}`);
  await page.locator('[data-testid=session-row]').first().waitFor();
  return page;
}

const row = (id: string) => page.locator(`[data-testid=session-row][data-session-id="${id}"]`);
const tab = (id: string) => page.locator(`[data-testid=tab][data-session-id="${id}"]`);
const pane = (id: string) => page.locator(`[data-testid=session-pane][data-session-id="${id}"]`);

async function openByName(name: string): Promise<string> {
  await page.fill('[data-testid=session-filter]', name);
  await page.press('[data-testid=session-filter]', 'Enter');
  const id = idOfName(name);
  await tab(id).waitFor();
  return id;
}

/** The project folder a session shares, as kept in its session_meta. */
function workspaceOf(id: string): string | undefined {
  const db = openSessionDbReadOnly(sessionPaths(home, id as SessionId).dbPath);
  try {
    return (db.prepare("SELECT value FROM session_meta WHERE key = 'vm_workspace'").get() as { value: string } | undefined)?.value;
  } finally {
    db.close();
  }
}

async function shot(name: string): Promise<string> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

beforeAll(async () => {
  if (missing) {
    console.log(`renderer e2e: skipped, ${missing}`);
    return;
  }
  const t0 = performance.now();
  console.log(`renderer e2e: ${ensureRendererBuilt()}`);
  mkdirSync(SHOTS, { recursive: true });
  // The list's sessions: realistic agent sessions (model calls, tools, files, bodies), the last crashed.
  await seedSessions(home, { sessions: 3, events: 300, seed: 7 });
  const cowork = idOfName('co-work1') as SessionId;
  const transcript = new PtyTranscript(sessionPaths(home, cowork).ptyLogPath, { cols: 100, rows: 30 }, 'xterm-256color');
  transcript.output(
    Buffer.from(
      'root@capsem:~# npm test\r\n\x1b[32m  ✓ retries three times then gives up\x1b[0m\r\n\x1b[32m  ✓ logs why it stopped\x1b[0m\r\n\r\n  2 passing (41ms)\r\n\r\nroot@capsem:~# git status --short\r\n M src/main.ts\r\n?? notes.md\r\nroot@capsem:~# ',
    ),
  );
  transcript.close();
  const long = new PtyTranscript(
    sessionPaths(home, idOfName('code-vm1') as SessionId).ptyLogPath,
    { cols: 100, rows: 30 },
    'xterm-256color',
  );
  for (let i = 0; i < LONG_REPLAY_LINES; i++) long.output(Buffer.from(`replayed line ${i} ${'.'.repeat(200)}\r\n`));
  long.output(Buffer.from('end of the long recording\r\n'));
  long.close();
  // 100,000 HTTP exchanges, appended as the proxy would (one writer, batched).
  const t1 = performance.now();
  big = await bigSession(home, 'big', BIG_ROWS);
  const seedBigMs = performance.now() - t1;
  // A JSON response that came gzip-encoded, recorded: stored decoded, the header kept.
  const gzSession = await liveSession(home, 'gz-body');
  gz = gzSession.id;
  const json = Buffer.from(JSON.stringify(GZ_JSON));
  const encoded = gzipSync(json);
  const gzipped = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
  await gzSession.recorder.record(
    httpsExchange('api.example', '/v1/things', { method: 'POST', responseHeaders: gzipped, responseBody: capturedBody(encoded) }),
  );
  // The same answer stored still encoded, as another tool's session.db may hold it: no recording
  // of ours writes that, so its rows are written by hand.
  const foreign = gzSession.writer.append('net_events', {
    timestamp: now(),
    domain: 'api.example',
    decision: 'allowed',
    method: 'POST',
    path: '/v1/things',
    status_code: 200,
    response_headers: JSON.stringify(gzipped),
    bytes_received: encoded.length,
  })!;
  gzSession.writer.append('event_body_blobs', {
    event_id: foreign.eventId!,
    source_table: 'net_events',
    direction: 'response',
    content_type: 'application/json',
    content_encoding: 'gzip',
    original_bytes: encoded.length,
    stored_bytes: encoded.length,
    body: encoded,
    created_at: now(),
  });
  // A WebSocket exchange in the same session: its frames recorded as they pass, then the exchange.
  const socketId = gzSession.recorder.reserveEventId();
  for (const [direction, opcode, size, content, body] of [
    ['sent', 'text', 11, 'hello there', null],
    ['received', 'binary', 2, null, Buffer.from([0xca, 0xfe])],
    ['received', 'close', 5, '1000 bye', null],
  ] as const)
    gzSession.recorder.frame(socketId, {
      at: new Date(),
      direction,
      opcode,
      fin: true,
      size,
      content,
      body,
      storedBytes: size,
      truncated: false,
    });
  const counted = (total: number) => ({ bytes: Buffer.alloc(0), total, truncated: true });
  await gzSession.recorder.record(
    httpsExchange('chat.example', '/socket', {
      kind: 'websocket',
      status: 101,
      eventId: socketId,
      responseHeaders: { upgrade: 'websocket', connection: 'Upgrade' },
      requestBody: counted(11),
      responseBody: counted(16),
    }),
  );
  await gzSession.end();

  if (agentMissing === null) {
    const workspace = join(home.root, 'live-ws');
    mkdirSync(workspace, { recursive: true });
    const proxyPort = await freePort();
    vmHost = new VmHost({
      home,
      backend: () => new HostAgentBackend(workspace),
      plan: (_kind, onProgress) => async (_paths, caPem) => {
        await imageBuild?.(onProgress);
        return hostAgentPlan(workspace, proxyPort, caPem, { PS1: '$ ' });
      },
    });
  }
  core = new AppCore({ home, vmHost, vmUnavailableReason: agentMissing ?? undefined, liveIntervalMs: 250 });
  door = new EventDoor(core);
  app = await openAppInChromium(door, home, 'renderer e2e test');
  ({ server, page } = app);
  console.log(`renderer e2e: ready in ${Math.round(performance.now() - t0)} ms (100,000 rows seeded in ${Math.round(seedBigMs)} ms)`);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await vmHost?.stopAll();
  core?.close();
  home.remove();
}, 30_000);

describe.skipIf(missing !== null)(`the renderer in Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('lists the seeded sessions by id and name with their figures', async () => {
    await fresh();
    const list = await call('sessions.list', {});
    expect(list).toHaveLength(5);
    await expect.poll(() => page.locator('[data-testid=session-row]').count()).toBe(5);
    await expect.poll(() => page.locator('.session-list .count').innerText()).toBe('5 sessions');
    for (const s of list) {
      const cells = await row(s.id).locator('td').allInnerTexts();
      expect(cells[0]).toContain(s.id.slice(0, 8));
      expect(await row(s.id).locator('[data-testid=copy-id]').getAttribute('title')).toContain(s.id);
      expect(cells[1]).toBe(s.name);
      if (s.name === 'big') {
        expect(cells[7]).toMatch(/^100k \(1031 denied\)$/);
        expect(cells[5]).toBe('$0');
      } else if (s.name === 'gz-body') {
        expect(cells[7]).toBe('3');
      } else {
        // The agent sessions: dollars and cents, requests as a plain count.
        expect(s.costUsd).toBeGreaterThan(0.01);
        expect(cells[5]).toBe(`$${s.costUsd.toFixed(2)}`);
        expect(s.requests).toBeGreaterThan(0);
        expect(cells[7]).toMatch(new RegExp(`^${s.requests}\\b`));
        expect(s.toolCalls).toBeLessThan(10_000);
        expect(cells[8]).toBe(String(s.toolCalls));
        expect(cells[6]).toMatch(/^\d+(\.\d)?[kM]? \+ \d+(\.\d)?[kM]?$/);
      }
    }
    expect(await row(idOfName('code-vm2')).innerText()).toContain('crashed');
  });

  it('opens the tab of the session a typed name belongs to (Enter in the filter)', async () => {
    await fresh();
    const id = await openByName('code-vm1');
    expect(await page.locator('[data-testid=tab]').count()).toBe(1);
    expect(await page.locator('[data-testid=tab][aria-selected=true]').getAttribute('data-session-id')).toBe(id);
    expect(await tab(id).locator('.tab-title').innerText()).toBe('code-vm1');
    await expect.poll(() => pane(id).locator('.session-name').innerText()).toBe('code-vm1');
    // A name two sessions start with is not a name: the resolver says so and offers both.
    await page.click('[data-testid=tab-list]');
    await page.fill('[data-testid=session-filter]', 'code-vm');
    await page.press('[data-testid=session-filter]', 'Enter');
    await page.locator('[data-testid=resolve-error]').waitFor();
    const offered = await page
      .locator('[data-testid=resolve-candidate]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-session-id')));
    expect(offered.sort()).toEqual([idOfName('code-vm1'), idOfName('code-vm2')].sort());
    expect(await page.locator('[data-testid=tab]').count()).toBe(1);
  });

  it('keeps two sessions with the same name apart, and a rename retitles the same tab', async () => {
    await fresh();
    const first = await liveSession(home, 'twin');
    await first.end();
    const db = openMainDb(home);
    releaseName(db, first.id);
    db.close();
    const second = await liveSession(home, 'twin');
    await second.end();
    // They reach the open list through the live watch (session.changed), no reload.
    await row(first.id).waitFor();
    await row(second.id).waitFor();
    expect(await row(first.id).locator('td.name').innerText()).toBe('twin');
    expect(await row(second.id).locator('td.name').innerText()).toBe('twin');

    await row(first.id).click();
    await tab(first.id).waitFor();
    await page.click('[data-testid=tab-list]');
    await row(second.id).click();
    await tab(second.id).waitFor();
    const tabIds = await page.locator('[data-testid=tab]').evaluateAll((els) => els.map((e) => e.getAttribute('data-session-id')));
    expect(tabIds).toEqual([first.id, second.id]);
    expect(await tab(first.id).locator('.tab-title').innerText()).toBe(`twin · ${first.id.slice(0, 8)}`);
    expect(await tab(second.id).locator('.tab-title').innerText()).toBe(`twin · ${second.id.slice(0, 8)}`);

    await call('sessions.rename', { id: second.id, name: 'twin-renamed' });
    await expect.poll(() => tab(second.id).locator('.tab-title').innerText()).toBe('twin-renamed');
    expect(await tab(first.id).locator('.tab-title').innerText()).toBe('twin');
    expect(await page.locator('[data-testid=tab]').evaluateAll((els) => els.map((e) => e.getAttribute('data-session-id')))).toEqual([
      first.id,
      second.id,
    ]);
    expect(await pane(second.id).locator('.session-name').innerText()).toBe('twin-renamed');
  });

  it('paints a 100,000-row network table at once and scrolls it smoothly to the last row', async () => {
    await fresh('&probe=1');
    const last = (await call('events.page', { id: big, kind: 'net', offset: BIG_ROWS - 1, limit: 1 })).rows[0]!;
    // Opening the tab lands on the Network view (an ended session): timed in the page from the
    // click to the frame after the first row is in the DOM.
    const firstPaintMs = await page.evaluate(
      (id) =>
        new Promise<number>((resolve, reject) => {
          const target = document.querySelector<HTMLElement>(`[data-testid=session-row][data-session-id="${id}"]`);
          if (!target) return reject(new Error('no row for the big session'));
          const t0 = performance.now();
          const found = () => document.querySelector(`[data-testid=session-pane][data-session-id="${id}"] [data-testid=net-row]`) !== null;
          const observer = new MutationObserver(() => {
            if (!found()) return;
            observer.disconnect();
            requestAnimationFrame(() => resolve(performance.now() - t0));
          });
          observer.observe(document.body, { childList: true, subtree: true });
          setTimeout(() => {
            observer.disconnect();
            reject(new Error('no net-row within 10 s'));
          }, 10_000);
          target.click();
        }),
      big,
    );
    console.log(`100,000-row table: first rows painted ${firstPaintMs.toFixed(0)} ms after the click`);
    expect(firstPaintMs).toBeLessThan(1000);
    const table = pane(big).locator('[data-testid=net-table]');
    await expect.poll(() => pane(big).locator('[data-testid=net-count]').innerText()).toBe('100k rows');
    expect(await table.getAttribute('aria-rowcount')).toBe(String(BIG_ROWS));

    // Scroll with the mouse wheel for about 3 s, frame times recorded by the page itself.
    const box = (await table.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.evaluate(() => {
      window.__capsemFrames!.length = 0;
    });
    const until = Date.now() + 3000;
    let wheels = 0;
    while (Date.now() < until) {
      // Each wheel call returns once the page has taken the event (~2 frames), which paces it.
      await page.mouse.wheel(0, 600);
      wheels += 1;
    }
    const stats = frameStats(await page.evaluate(() => window.__capsemFrames!.slice()));
    const scrolled = await table.evaluate((el) => el.scrollTop);
    console.log(
      `wheel scroll over 100,000 rows (${wheels} wheel events, ${Math.round(scrolled / 24)} rows down): ` +
        `frames=${stats.count} p50=${stats.p50.toFixed(1)} ms p95=${stats.p95.toFixed(1)} ms max=${stats.max.toFixed(1)} ms >50ms=${stats.over50}`,
    );
    // `npm test` runs this file on its own, after the rest (a TCG guest beside it would take a core).
    // Thresholds for a loaded 2-core machine, where the core, its SQLite reads, Chromium and this
    // test share two cores. Frame times come in whole vsyncs (16.7, 33.3, 50, 66.7 ms...). Alone,
    // this scroll measures p95 16.8 ms and max 33 ms (also with three busy loops on the cores);
    // run beside the integration tests (vitest's other workers seeding 100k rows, the agent
    // building) it measured p95 50-67 ms and max 117 ms. So: p95 under 100 ms (95% of frames
    // at 10 fps or better) and no frame over 250 ms (no visible freeze), about twice the worst
    // loaded figures. A table that put all 100k rows in the DOM, fetched them at once or
    // re-rendered them on every scroll costs hundreds of milliseconds to seconds a frame and
    // fails both by far.
    expect(stats.count).toBeGreaterThan(45);
    expect(stats.p95).toBeLessThan(100);
    expect(stats.max).toBeLessThan(250);
    // The rows the wheel reached (pages past the first two) are real rows once their pages arrive.
    expect(scrolled).toBeGreaterThan(24 * 400);
    await expect.poll(() => pane(big).locator('[data-testid=row-loading]').count()).toBe(0);
    const seqs = await pane(big)
      .locator('[data-testid=net-row]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));
    expect(Math.min(...seqs)).toBeGreaterThan(350);

    // The end of the table: the last row (seq and path) is there.
    await table.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const lastRow = pane(big).locator(`[data-testid=net-row][data-seq="${last.seq}"]`);
    await lastRow.waitFor({ timeout: 5000 });
    expect(await lastRow.innerText()).toContain(`/item/${BIG_ROWS - 1}`);
    await shot('network-100k-end');
  });

  it('shows a gzip response body decoded and pretty-printed, and says it was gzip', async () => {
    await fresh();
    await row(gz).click();
    const rows = pane(gz).locator('[data-testid=net-row]', { hasText: 'api.example' });
    await expect.poll(() => rows.count()).toBe(2);
    for (let i = 0; i < 2; i++) {
      await rows.nth(i).click();
      const detail = pane(gz).locator('[data-testid=detail-pane]');
      await expect.poll(() => detail.getAttribute('data-seq')).toBe(await rows.nth(i).getAttribute('data-seq'));
      const body = detail.locator('[data-testid=body-response]');
      await body.waitFor();
      expect(await body.locator('pre.body-text').innerText()).toBe(JSON.stringify(GZ_JSON, null, 2));
      expect(await body.locator('h4').innerText()).toMatch(/application\/json, gzip,/);
      await body.scrollIntoViewIfNeeded();
    }
    await shot('network-gzip-body');
  });

  it("lists a WebSocket exchange's frames in its detail, each way, text as text and bytes as hex", async () => {
    await fresh();
    await row(gz).click();
    await pane(gz).locator('[data-testid=net-row]', { hasText: 'chat.example' }).click();
    const frames = pane(gz).locator('[data-testid=detail-pane] [data-testid=frame]');
    await expect.poll(() => frames.count()).toBe(3);
    expect(
      await frames.evaluateAll((list) =>
        list.map((f) => [f.getAttribute('data-direction'), f.getAttribute('data-opcode'), f.querySelector('pre')?.textContent ?? '']),
      ),
    ).toEqual([
      ['sent', 'text', 'hello there'],
      ['received', 'binary', 'cafe'],
      ['received', 'close', '1000 bye'],
    ]);
    await frames.first().scrollIntoViewIfNeeded();
    await shot('network-websocket-frames');
  });

  it.skipIf(agentMissing !== null)(
    `echoes typed input in a live terminal on a real pty${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      const { id } = await call('sessions.start', { name: 'live-e2e', image: 'minimal' });
      await fresh();
      await row(id).click();
      const terminal = pane(id).locator('[data-testid=terminal]');
      await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
      await terminal.click();
      await page.keyboard.type('echo hi-$((6*7))');
      await page.keyboard.press('Enter');
      const screen = terminal.locator('.xterm-rows');
      await expect.poll(() => screen.innerText(), { timeout: 10_000 }).toMatch(/^hi-42$/m);
      expect(await screen.innerText()).toContain('echo hi-$((6*7))');
      await shot('terminal-live');
    },
  );

  it.skipIf(agentMissing !== null)(
    `New session → Start opens the tab on Terminal at once, with the image build's stages (two at once) in the tab and the row, then the live terminal${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      let finishBuild!: () => void;
      const built = new Promise<void>((resolve) => (finishBuild = resolve));
      const build: BuildStage[] = [
        { stage: 'inputs', state: 'done', fraction: 1, ms: 1_400 },
        { stage: 'download', state: 'running', fraction: 0.3, ms: 20_000 },
        { stage: 'agents', state: 'running', fraction: 0.55, ms: 18_000 },
        { stage: 'squashfs', state: 'pending', fraction: 0, ms: 0 },
      ];
      imageBuild = async (onProgress) => {
        onProgress({ stage: 'download', message: 'Unpacking bash (5.2.15-2+b7)', fraction: 0.3, stageFraction: 0.3, build });
        await built;
        onProgress({ stage: 'done', message: 'built agent-0123456789abcdef', fraction: 1, stageFraction: 1, build: [] });
      };
      try {
        await fresh();
        await page.click('[data-testid=new-session]');
        await page.fill('[data-testid=new-session-name]', 'from-form');
        await page.click('[data-testid=new-session-start]');
        const opened = page.locator('[data-testid=tab][aria-selected=true]');
        await opened.waitFor();
        const id = (await opened.getAttribute('data-session-id'))!;
        expect(id).toBe(idOfName('from-form'));
        expect(await pane(id).locator('[data-testid=view-terminal]').getAttribute('aria-selected')).toBe('true');
        const inTab = pane(id).locator('[data-testid=terminal-note] [data-testid=start-progress]');
        await expect
          .poll(() => inTab.innerText())
          .toMatch(/^building the image: downloading packages 30% · coding agents 55%\s+Unpacking bash/);
        expect(await inTab.getAttribute('data-phase')).toBe('image');
        const stages = inTab.locator('[data-testid=build-stage]');
        expect(
          await stages.evaluateAll((items) =>
            items.map((li) => [li.getAttribute('data-state'), (li as HTMLElement).innerText.replace(/\s+/g, ' ').trim()]),
          ),
        ).toEqual([
          ['done', '✓ hashing inputs 1.4s'],
          ['running', '▸ downloading packages 30%'],
          ['running', '▸ coding agents 55%'],
          ['pending', '· compressing the root'],
        ]);
        expect(await inTab.locator('[data-testid=build-stage][data-state=running] progress').count()).toBe(2);
        await shot('start-progress-tab');
        await page.click('[data-testid=tab-list]');
        await expect
          .poll(() => row(id).locator('[data-testid=start-progress]').innerText())
          .toBe('building the image: downloading packages 30% · coding agents 55%');
        expect(await row(id).locator('[data-testid=build-stages]').count()).toBe(0);
        await shot('start-progress-row');
        await tab(id).click();
        finishBuild();
        await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
        await page.click('[data-testid=tab-list]');
        await expect.poll(() => row(id).locator('[data-testid=status-badge]').innerText()).toBe('running');
        expect(await row(id).locator('[data-testid=start-progress]').count()).toBe(0);
        await call('sessions.stop', { id: id as SessionId });
      } finally {
        finishBuild();
        imageBuild = null;
      }
    },
  );

  it.skipIf(agentMissing !== null)(
    `a start that fails says why in its tab and its row${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      const WHY = 'mmdebstrap failed (exit 1): E: cannot download from deb.debian.org; check the network or set http_proxy';
      imageBuild = async (onProgress) => {
        onProgress({
          stage: 'download',
          message: 'Get:1 http://deb.debian.org/debian bookworm InRelease',
          fraction: 0.05,
          stageFraction: 0.1,
          build: [{ stage: 'download', state: 'running', fraction: 0.1, ms: 500 }],
        });
        throw new Error(WHY);
      };
      try {
        await fresh();
        await page.click('[data-testid=new-session]');
        await page.fill('[data-testid=new-session-name]', 'no-network');
        await page.click('[data-testid=new-session-start]');
        const opened = page.locator('[data-testid=tab][aria-selected=true]');
        await opened.waitFor();
        const id = (await opened.getAttribute('data-session-id'))!;
        const error = pane(id).locator('[data-testid=terminal-note] .error');
        await error.waitFor();
        expect(await error.innerText()).toBe(`the guest image is not ready: ${WHY}`);
        await shot('start-failed-tab');
        await page.click('[data-testid=tab-list]');
        await expect.poll(() => row(id).locator('[data-testid=status-badge]').innerText()).toBe('crashed');
        expect(await row(id).locator('[data-testid=status-reason]').innerText()).toBe(`image not ready: ${WHY}`);
      } finally {
        imageBuild = null;
      }
    },
  );

  it.skipIf(agentMissing !== null)(
    `shows a live terminal's screen again after switching away, closing its tab and reloading the page${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      const { id } = await call('sessions.start', { name: 'repaint-e2e', image: 'minimal' });
      await fresh();
      await row(id).click();
      const terminal = pane(id).locator('[data-testid=terminal]');
      const screen = () =>
        terminal
          .locator('.xterm-rows')
          .innerText()
          .then((text) => text.replace(/[ \u00a0]+$/gm, '').trimEnd());
      await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
      await terminal.click();
      for (const word of ['alpha', 'beta', 'gamma']) {
        await page.keyboard.type(`echo ${word}-$((6*7))`);
        await page.keyboard.press('Enter');
        await expect.poll(screen).toMatch(new RegExp(`^${word}-42$`, 'm'));
      }
      await expect.poll(screen).toMatch(/gamma-42\n[#$]$/);
      const before = await screen();

      await pane(id).locator('[data-testid=view-network]').click();
      await pane(id).locator('[data-testid=view-terminal]').click();
      await expect.poll(screen).toBe(before);

      await page.click('[data-testid=tab-list]');
      await tab(id).click();
      await expect.poll(screen).toBe(before);

      await tab(id).locator('[data-testid=tab-close]').click();
      await row(id).click();
      await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
      await expect.poll(screen).toBe(before);

      await fresh();
      await row(id).click();
      await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
      await expect.poll(screen).toBe(before);
      // And it is the live shell, not a picture of it.
      await terminal.click();
      await page.keyboard.type('echo delta-$((6*7))');
      await page.keyboard.press('Enter');
      await expect.poll(screen).toMatch(/^delta-42$/m);
      await shot('terminal-repainted');
      await call('sessions.stop', { id: id as SessionId });
    },
  );

  it('exports the session as an archive by default: a tar whose first member is the manifest', async () => {
    await fresh();
    const id = await openByName('co-work1');
    await pane(id).locator('[data-testid=export]').click();
    const result = pane(id).locator('[data-testid=export-result]');
    await result.waitFor();
    const path = (await result.getAttribute('title'))!.replace(/ \([^)]*\)$/, '');
    const head = readFileSync(path).subarray(0, 512);
    expect(head.subarray(0, 100).toString('latin1').replace(/\0+$/, '')).toBe('manifest.json');
    expect(head.subarray(257, 262).toString('latin1')).toBe('ustar');
  });

  it('exports the session to a JSONL file with one line per event', async () => {
    await fresh();
    const id = await openByName('co-work1');
    await pane(id).locator('[data-testid=export-format]').selectOption('jsonl');
    await pane(id).locator('[data-testid=export]').click();
    const result = pane(id).locator('[data-testid=export-result]');
    await result.waitFor();
    const title = (await result.getAttribute('title'))!;
    const path = title.replace(/ \([^)]*\)$/, '');
    expect(path.startsWith(join(home.root, 'exports'))).toBe(true);
    expect(await result.innerText()).toContain(path);
    expect(existsSync(path)).toBe(true);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    // One line per event the API serves for the session: an exchange is its request and its response.
    const store = SessionEventStore.open(id as SessionId, sessionPaths(home, id as SessionId).dbPath);
    const events = store.bounds().total;
    store.close();
    expect(events).toBeGreaterThan(100);
    expect(lines).toHaveLength(events);
    expect(lines.every((l) => (JSON.parse(l) as { sessionId: string }).sessionId === id)).toBe(true);
  });

  it('opens a session asked for by app.open, and shows candidates for a name that is not one', async () => {
    await fresh();
    expect(door.connections).toBeGreaterThan(0);
    const vm1 = idOfName('code-vm1');
    door.emit('app.open', { query: 'code-vm1' });
    await tab(vm1).waitFor();
    expect(await page.locator('[data-testid=tab][aria-selected=true]').getAttribute('data-session-id')).toBe(vm1);

    door.emit('app.open', { query: 'co-work' });
    const problem = page.locator('[data-testid=open-problem]');
    await problem.waitFor();
    expect(await problem.innerText()).toContain('co-work');
    const cowork = idOfName('co-work1');
    const candidate = page.locator(`[data-testid=open-candidate][data-session-id="${cowork}"]`);
    expect(await candidate.innerText()).toContain('co-work1');
    await candidate.click();
    await tab(cowork).waitFor();
    expect(await page.locator('[data-testid=tab][aria-selected=true]').getAttribute('data-session-id')).toBe(cowork);
    expect(await problem.count()).toBe(0);
  });

  it('screenshots every main view', async () => {
    await fresh();
    const files: string[] = [await shot('list')];
    const id = await openByName('co-work1');
    const p = pane(id);
    // An ended agent session opens on its story.
    await p.locator('[data-testid=conversation-turn]').first().waitFor();
    files.push(await shot('conversation'));
    await p.locator('[data-testid=view-network]').click();
    await p.locator('[data-testid=net-row]').first().waitFor();
    // A model provider's exchange, which carries request and response bodies.
    await p.locator('[data-testid=net-row]', { hasText: 'api.anthropic.com' }).first().click();
    await p.locator('[data-view=network] [data-testid=body-response]').scrollIntoViewIfNeeded();
    files.push(await shot('network-detail'));
    await p.locator('[data-testid=view-models]').click();
    await p.locator('[data-testid=model-row]').nth(1).click();
    await p.locator('[data-testid=model-items]').scrollIntoViewIfNeeded();
    files.push(await shot('model-calls'));
    await p.locator('[data-testid=view-tools]').click();
    await p.locator('[data-testid=tool-row]').nth(1).click();
    await p.locator('[data-view=tools] [data-testid=detail-pane] .kv').first().waitFor();
    files.push(await shot('tools'));
    await p.locator('[data-testid=view-files]').click();
    await p.locator('[data-testid=file-row]').first().waitFor();
    files.push(await shot('files'));
    await p.locator('[data-testid=view-timeline]').click();
    await p.locator('[data-testid=timeline-lane]').first().waitFor();
    files.push(await shot('timeline'));
    await p.locator('[data-testid=view-cost]').click();
    await p.locator('[data-testid=cost-chart]').waitFor();
    files.push(await shot('cost'));
    await p.locator('[data-testid=view-terminal]').click();
    await expect.poll(() => p.locator('[data-testid=terminal-note]').innerText()).toMatch(/^replay of an ended session/);
    await expect.poll(() => p.locator('.xterm-rows').innerText()).toContain('2 passing');
    files.push(await shot('terminal'));
    for (const file of files) expect(statSync(file).size, file).toBeGreaterThan(5 * 1024);
    console.log(`screenshots: ${files.map((f) => `${f.slice(SHOTS.length)} ${(statSync(f).size / 1024).toFixed(0)} KB`).join(', ')}`);
  });

  it('replays a recorded terminal several chunks long through to its last line', async () => {
    await fresh();
    const id = await openByName('code-vm1');
    await pane(id).locator('[data-testid=view-terminal]').click();
    await expect
      .poll(() => pane(id).locator('[data-testid=terminal-note]').innerText(), { timeout: 20_000 })
      .toBe(`replay of an ended session (${LONG_REPLAY_LINES + 1} recorded events)`);
    await expect.poll(() => pane(id).locator('.xterm-rows').innerText()).toContain('end of the long recording');
  });

  it('imports an archive picked with Import… and opens the new session in its tab', async () => {
    await fresh();
    const source = idOfName('gz-body');
    const { path } = await call('sessions.export', { id: source as SessionId, format: 'archive' });
    const before = new Set((await call('sessions.list', {})).map((s) => s.id));
    await page.setInputFiles('[data-testid=import-file]', path);
    // The tab that opens is the new session's: a new id, the imported copy of gz-body.
    const opened = page.locator('[data-testid=tab][aria-selected=true]');
    await opened.waitFor();
    const id = (await opened.getAttribute('data-session-id'))!;
    expect(before.has(id)).toBe(false);
    const info = await call('sessions.info', { id });
    expect(info).toMatchObject({ name: 'gz-body-2', status: 'stopped', mode: 'imported', live: false, resumable: false });
    await expect.poll(() => pane(id).locator('.session-name').innerText()).toBe('gz-body-2');
    await expect.poll(() => pane(id).locator('[data-testid=net-row]').count()).toBe(3);
    expect(await pane(id).locator('[data-testid=resume]').count()).toBe(0);
    await page.click('[data-testid=tab-list]');
    expect(await row(id).locator('td.name').innerText()).toBe('gz-body-2');
  });

  it('shows the drop overlay while a file is dragged over the window, and a refused drop in a dismissible bar', async () => {
    await fresh();
    const tabsBefore = await page.locator('[data-testid=tab]').count();
    // A file dragged in from outside, as Chromium delivers it (DragEvents carrying a DataTransfer).
    await page.evaluate(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['this is not a session'], 'notes.capsem'));
      (window as unknown as { __drop: DataTransfer }).__drop = transfer;
      document.body.dispatchEvent(new DragEvent('dragenter', { bubbles: true, cancelable: true, dataTransfer: transfer }));
      document.body.dispatchEvent(new DragEvent('dragover', { bubbles: true, cancelable: true, dataTransfer: transfer }));
    });
    const overlay = page.locator('[data-testid=drop-overlay]');
    await overlay.waitFor();
    expect(await overlay.innerText()).toBe('Drop a .capsem archive or a session.db to import');
    await shot('drop-overlay');
    await page.evaluate(() => {
      const transfer = (window as unknown as { __drop: DataTransfer }).__drop;
      document.body.dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: transfer }));
    });
    expect(await overlay.count()).toBe(0);
    const error = page.locator('[data-testid=import-error]');
    await error.waitFor();
    expect(await error.innerText()).toMatch(/^Could not import notes\.capsem: .*neither a Capsem session archive nor a session\.db/);
    expect(await error.innerText()).not.toContain(home.runDir);
    await shot('import-refused');
    expect(await page.locator('[data-testid=tab]').count()).toBe(tabsBefore);
    await page.click('[data-testid=import-error-dismiss]');
    expect(await error.count()).toBe(0);
  });

  it.skipIf(agentMissing !== null)(
    `resumes an ended named session in the same tab: its terminal is live again${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      const { id } = await call('sessions.start', { name: 'resume-e2e', image: 'minimal' });
      await call('sessions.stop', { id });
      expect(await call('sessions.info', { id })).toMatchObject({ status: 'stopped', live: false, resumable: true });
      await fresh();
      expect(await openByName('resume-e2e')).toBe(id);
      const resume = pane(id).locator('[data-testid=resume]');
      await resume.click();
      // The same tab (keyed by id), now on the Terminal view, attached live.
      await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
      expect(await pane(id).locator('[data-testid=view-terminal]').getAttribute('aria-selected')).toBe('true');
      expect(await page.locator('[data-testid=tab]').evaluateAll((els) => els.map((e) => e.getAttribute('data-session-id')))).toEqual([id]);
      expect(await resume.count()).toBe(0);
      await expect.poll(() => pane(id).locator('[data-testid=stop]').count()).toBe(1);
      const terminal = pane(id).locator('[data-testid=terminal]');
      await terminal.click();
      await page.keyboard.type('echo back-$((6*8))');
      await page.keyboard.press('Enter');
      await expect.poll(() => terminal.locator('.xterm-rows').innerText(), { timeout: 10_000 }).toMatch(/^back-48$/m);
      await pane(id).locator('[data-testid=stop]').click();
      await expect.poll(() => pane(id).locator('[data-testid=resume]').count()).toBe(1);
    },
  );

  it('says why a session cannot be resumed when Resume fails', async () => {
    // A named VM session of the agent image whose disk is gone: kept for resuming by its record,
    // but nothing to boot (without the agent here, VMs are not available at all). The tab says why.
    const db = openMainDb(home);
    const record = registerSession(db, { name: 'lost-disk', mode: 'vm' });
    db.close();
    const paths = sessionPaths(home, record.id);
    ensurePrivateDir(paths.dir);
    await (await SessionWriter.open(paths.dbPath, { session_id: record.id })).close();
    const main = openMainDb(home);
    rollUpSession(home, main, record.id, { status: 'stopped' });
    main.close();
    await fresh();
    const id = await openByName('lost-disk');
    await pane(id).locator('[data-testid=resume]').click();
    const error = pane(id).locator('[data-testid=action-error]');
    await error.waitFor();
    expect(await error.innerText()).toMatch(agentMissing === null ? /lost-disk.*has lost its disk/ : /\S/);
    expect(await page.locator('[data-testid=tab]').count()).toBe(1);
    expect(await pane(id).locator('[data-testid=resume]').isEnabled()).toBe(true);
  });

  it.skipIf(agentMissing !== null)(
    `New session shares a project folder picked from the recent ones, shows a gone one as gone, and asks before sharing the whole home folder${agentMissing ? ` (skipped: ${agentMissing})` : ''}`,
    async () => {
      // Folders outside CAPSEM_HOME, as a user's projects are; the first is used once through the call.
      const projects = mkdtempSync(join(tmpdir(), 'capsem-e2e-projects-'));
      const used = join(projects, 'shop-api');
      const gone = join(projects, 'old-thing');
      mkdirSync(used);
      mkdirSync(gone);
      try {
        for (const folder of [gone, used]) {
          const { id } = await call('sessions.start', { name: null, image: 'minimal', workspace: folder, wholeHome: false });
          await expect.poll(async () => (await call('sessions.info', { id: id as SessionId })).live).toBe(true);
          await call('sessions.stop', { id: id as SessionId });
        }
        rmSync(gone, { recursive: true });
        const sessionsBefore = (await call('sessions.list', {})).length;

        await fresh();
        await page.click('[data-testid=new-session]');
        const recent = page.locator('[data-testid=recent-folder]');
        await expect.poll(() => recent.allInnerTexts()).toEqual([used, `${gone} (gone)`]);
        expect(await recent.nth(0).isEnabled()).toBe(true);
        expect(await recent.nth(1).isDisabled()).toBe(true);
        // No system picker in browser mode: the page cannot learn a path, so it is typed or picked here.
        expect(await page.locator('[data-testid=new-session-pick-folder]').count()).toBe(0);

        await page.fill('[data-testid=new-session-folder]', homedir());
        await page.click('[data-testid=new-session-start]');
        const alert = page.locator('[data-testid=new-session-form] [role=alert]');
        await expect
          .poll(() => alert.innerText())
          .toBe(
            `${homedir()} is your whole home folder: every key, token and project in it would be open to the agent; share your project's folder instead, or tick "Share my whole home folder" if you mean it`,
          );
        await page.locator('[data-testid=new-session-whole-home]').waitFor();
        await shot('new-session-whole-home');
        expect((await call('sessions.list', {})).length).toBe(sessionsBefore);
        // Ticked, the same folder is shared (this test's guest is a host process that ignores it).
        await page.check('[data-testid=new-session-whole-home]');
        await page.click('[data-testid=new-session-start]');
        const homeTab = page.locator('[data-testid=tab][aria-selected=true]');
        await homeTab.waitFor();
        const homeId = (await homeTab.getAttribute('data-session-id'))!;
        await expect.poll(() => pane(homeId).locator('[data-testid=terminal-note]').innerText()).toBe('live');
        expect(workspaceOf(homeId)).toBe(realpathSync(homedir()));
        await call('sessions.stop', { id: homeId as SessionId });

        await page.click('[data-testid=tab-list]');
        await page.click('[data-testid=new-session]');
        await expect.poll(() => recent.allInnerTexts()).toEqual([homedir(), used, `${gone} (gone)`]);
        await recent.nth(1).click();
        expect(await page.inputValue('[data-testid=new-session-folder]')).toBe(used);
        expect(await page.locator('[data-testid=new-session-whole-home]').count()).toBe(0);
        await page.fill('[data-testid=new-session-name]', 'in-shop-api');
        await shot('new-session-recent-folder');
        await page.click('[data-testid=new-session-start]');
        const opened = page.locator('[data-testid=tab][aria-selected=true]');
        await opened.waitFor();
        const id = (await opened.getAttribute('data-session-id'))!;
        expect(id).toBe(idOfName('in-shop-api'));
        await expect.poll(() => pane(id).locator('[data-testid=terminal-note]').innerText()).toBe('live');
        expect(workspaceOf(id)).toBe(realpathSync(used));
        await call('sessions.stop', { id: id as SessionId });
      } finally {
        rmSync(projects, { recursive: true, force: true });
      }
    },
  );

  it('raised no uncaught errors in the page', () => {
    expect(app!.pageErrors).toEqual([]);
  });
});
