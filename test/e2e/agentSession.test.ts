import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { readVmSessionMeta } from '../../electron/vm/vmSessionMeta.ts';
import { appPage, chromiumMissing, ensureRendererBuilt, EventDoor, launchChromium, RENDERER_OUT } from '../helpers/browserHarness.ts';
import { CLAUDE_PROMPT } from '../helpers/terminalText.ts';
import { anthropicStream, json, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// Browser mode end to end with a real VM: New session, Claude Code picked in the agent picker and
// a project folder typed in the path field, Start; Claude Code (unmodified, from the agent image)
// opens at its prompt in the window's terminal, its key taken from the server's environment and
// its provider a local Anthropic upstream.

const missing = chromiumMissing() ?? agentImageUnavailable();
const KEY = 'sk-ant-api03-capsem-e2e-key-0123456789';

describe.skipIf(missing !== null)(
  `a Claude Code session started from New session in browser mode${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    const home = vmTestHome();
    const project = mkdtempSync(join(tmpdir(), 'capsem-e2e-agent-project-'));
    let anthropic: Upstream;
    let vmHost: VmHost;
    let core: AppCore;
    let server: BrowserServer;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      console.log(`agent session e2e: ${ensureRendererBuilt()}`);
      mkdirSync(project, { recursive: true });
      const upHome = tempHome();
      anthropic = await startUpstream(upHome, ['api.anthropic.com'], (req, body, res) => {
        if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens'))
          return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
        sse(
          res,
          anthropicStream((body as { model?: string } | null)?.model ?? 'claude-sonnet-4-6', 'Hello.', [], { input: 10, output: 2 }),
        );
      });
      upHome.remove();
      const caFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(caFile, anthropic.caPem);
      vmHost = new VmHost({
        home,
        backend: () => new QemuBackend(findQemu()!),
        hostEnv: { ...process.env, CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile },
      });
      core = new AppCore({ home, vmHost, env: { ANTHROPIC_API_KEY: KEY } });
      server = await startBrowserServer({
        core: new EventDoor(core),
        rendererDir: RENDERER_OUT,
        port: 0,
        modeReason: 'agent session e2e test',
        home,
      });
      browser = await launchChromium();
      page = await appPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await vmHost?.stopAll();
      core?.close();
      await anthropic?.close();
      home.remove();
      rmSync(project, { recursive: true, force: true });
    }, 60_000);

    it("shows Claude Code's prompt in the session's terminal, in the folder typed in the form", async () => {
      await page.goto(server.url);
      await page.click('[data-testid=new-session]');
      await page.fill('[data-testid=new-session-name]', 'claude-e2e');
      await page.selectOption('[data-testid=new-session-agent]', 'claude');
      await page.fill('[data-testid=new-session-folder]', project);
      await page.click('[data-testid=new-session-start]');
      const opened = page.locator('[data-testid=tab][aria-selected=true]');
      await opened.waitFor();
      const id = (await opened.getAttribute('data-session-id'))!;
      const pane = page.locator(`[data-testid=session-pane][data-session-id="${id}"]`);
      const screen = pane.locator('[data-testid=terminal] .xterm-rows');
      // Its banner in /workspace, then its input box's rule, drawn once it takes input.
      await expect.poll(() => screen.innerText().catch(() => ''), { timeout: 300_000, interval: 500 }).toMatch(CLAUDE_PROMPT);
      expect(await screen.innerText()).not.toMatch(
        /Choose the text style|Do you trust the files|Do you want to use this API key|Select login method/,
      );
      const meta = readVmSessionMeta(sessionPaths(home, id as SessionId).dbPath);
      expect(meta).toMatchObject({ vm_workspace: project, vm_terminal_agent: 'claude' });
      await core.handle('sessions.stop', { id });
    }, 600_000);
  },
);
