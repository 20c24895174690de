import { readFile, realpath } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  BrowserWindow,
  app,
  dialog,
  ipcMain,
  protocol,
  safeStorage,
  session,
  shell,
  type IpcMainInvokeEvent,
  type WebContents,
} from 'electron';
import type { EventName, EventPayload, HostCore } from '../contract/appContract.ts';
import { APP_ENTRY_URL, appResponseHeaders, isAppUrl, isInsideRoot, resolveAppAsset } from './appProtocol.ts';
import { importCore, type RunningCore } from './coreLoader.ts';
import { checkExternalLink } from './externalLinks.ts';
import { keychainCipher } from './keychainCipher.ts';
import { FORBIDDEN_SENDER, answerCall, isTrustedSender } from './ipcBridge.ts';
import { APP_OPEN_EVENT, IPC_CALL, IPC_EVENT, IPC_PICK_FOLDER, type CallAnswer, type EventMessage } from './ipcChannels.ts';
import {
  CAPSEM_SCHEME,
  SecondInstanceDataSchema,
  parseLaunchArgs,
  parseSessionLink,
  type LaunchRequest,
  type OpenRequest,
} from './launchArgs.ts';
import { permissionAllowed } from './permissions.ts';

// The Electron main process: one window onto the host core, nothing more. It takes the
// single-instance lock, serves the renderer from capsem://app/, bridges `capsem:call` and
// `capsem:event` to the core, and refuses everything else a page might try (navigation, popups,
// permissions, outbound requests, webviews). Bundled to dist/shell/main.cjs (npm run build:shell);
// __dirname below is that bundle's folder.

const APP_ROOT = resolve(__dirname, '..', '..');
const RENDERER_DIR = join(APP_ROOT, 'dist', 'renderer');
const PRELOAD = join(__dirname, 'preload.cjs');

// Must run before `ready`: a standard + secure scheme gets a real origin (so CSP 'self' and the
// sender check mean "our pages"), fetch() support and a code cache, like https would.
protocol.registerSchemesAsPrivileged([
  { scheme: CAPSEM_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true } },
]);

let win: BrowserWindow | null = null;
let pageLoaded = false;
const pendingOpens: OpenRequest[] = [];
let running: Promise<RunningCore> | null = null;
let quitting = false;

function log(message: string): void {
  process.stderr.write(`capsem: ${message}\n`);
}

// ---- launch requests (first launch, second launch, capsem:// links) --------------------------

function takeLaunch(request: LaunchRequest, source: string): void {
  if (request.kind === 'invalid') log(`ignored ${source}: ${request.reason}`);
  if (request.kind !== 'open') return;
  pendingOpens.push(request.request);
  flushOpens();
}

/** Open requests reach the page once it has loaded (the preload holds them until a listener). */
function flushOpens(): void {
  if (win === null || win.isDestroyed() || !pageLoaded) return;
  for (const request of pendingOpens.splice(0)) send(win.webContents, { name: APP_OPEN_EVENT, payload: request });
}

function send(contents: WebContents, message: EventMessage): void {
  if (!contents.isDestroyed()) contents.send(IPC_EVENT, message);
}

function focusWindow(): void {
  if (win === null || win.isDestroyed()) return;
  if (win.isMinimized()) win.restore();
  win.show();
  win.focus();
}

// ---- the core ----------------------------------------------------------------------------------

async function startCore(): Promise<RunningCore> {
  const core = await importCore(APP_ROOT);
  const keychain = keychainCipher(safeStorage, process.platform);
  log(keychain.note);
  return core.startAppCore({
    home: process.env.CAPSEM_HOME,
    resourcesDir: app.isPackaged ? process.resourcesPath : null,
    command: 'capsem desktop app',
    note: log,
    cipher: keychain.cipher,
    argv: process.argv,
  });
}

function coreForCalls(): Promise<HostCore> {
  if (running === null) return Promise.reject(new Error('the Capsem core is not running'));
  return running.then((r) => r.core);
}

function forwardEvents(core: HostCore): void {
  core.subscribe(<N extends EventName>(name: N, payload: EventPayload<N>) => {
    if (win !== null && !win.isDestroyed()) send(win.webContents, { name, payload });
  });
}

// ---- IPC -------------------------------------------------------------------------------------------

function senderIsOurWindow(event: IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame;
  const main = win !== null && !win.isDestroyed() ? win.webContents.mainFrame : null;
  return isTrustedSender({
    senderWebContentsId: event.sender.id,
    windowWebContentsId: win !== null && !win.isDestroyed() ? win.webContents.id : null,
    frameUrl: frame?.url ?? null,
    isMainFrame: frame !== null && main !== null && frame.processId === main.processId && frame.routingId === main.routingId,
  });
}

ipcMain.handle(IPC_CALL, async (event, raw: unknown): Promise<CallAnswer> => {
  if (!senderIsOurWindow(event)) {
    log(`refused a call from ${event.senderFrame?.url ?? 'a destroyed frame'}`);
    return { ok: false, error: FORBIDDEN_SENDER };
  }
  return answerCall(coreForCalls(), raw);
});

// The dialog is the main process's, attached to our window: the page learns only the folder the
// user chose, which sessions.start then checks like any other.
ipcMain.handle(IPC_PICK_FOLDER, async (event): Promise<string | null> => {
  if (!senderIsOurWindow(event) || win === null || win.isDestroyed()) {
    log(`refused a folder picker for ${event.senderFrame?.url ?? 'a destroyed frame'}`);
    return null;
  }
  const chosen = await dialog.showOpenDialog(win, {
    title: 'Project folder to share with the session',
    properties: ['openDirectory', 'createDirectory'],
  });
  return chosen.canceled ? null : (chosen.filePaths[0] ?? null);
});

// ---- the renderer's protocol -----------------------------------------------------------------

async function serveApp(request: Request): Promise<Response> {
  const asset = resolveAppAsset(RENDERER_DIR, request.url);
  if (asset.kind === 'refused')
    return new Response(asset.reason, { status: asset.status, headers: appResponseHeaders('text/plain; charset=utf-8') });
  try {
    // A symlink inside dist/renderer must not lead out of it.
    const [root, file] = await Promise.all([realpath(RENDERER_DIR), realpath(asset.path)]);
    if (!isInsideRoot(root, file))
      return new Response('outside the renderer folder', { status: 403, headers: appResponseHeaders('text/plain; charset=utf-8') });
    return new Response(await readFile(file), { status: 200, headers: appResponseHeaders(asset.contentType) });
  } catch {
    const hint = asset.path.endsWith('index.html') ? ' (the renderer is not built: npm run build:renderer)' : '';
    return new Response(`not found${hint}`, { status: 404, headers: appResponseHeaders('text/plain; charset=utf-8') });
  }
}

// ---- hardening every webContents ---------------------------------------------------------------

function openExternally(url: string): void {
  const check = checkExternalLink(url);
  if (check.ok) void shell.openExternal(check.url);
  else log(`refused to open ${url}: ${check.reason}`);
}

app.on('web-contents-created', (_event, contents) => {
  contents.setWindowOpenHandler(({ url }) => {
    openExternally(url);
    return { action: 'deny' };
  });
  contents.on('will-navigate', (event) => {
    if (isAppUrl(event.url)) return;
    event.preventDefault();
    openExternally(event.url);
  });
  contents.on('will-redirect', (event) => {
    if (!isAppUrl(event.url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
});

function hardenSession(): void {
  const ses = session.defaultSession;
  ses.setPermissionRequestHandler((_contents, permission, callback, details) =>
    callback(permissionAllowed(permission, details.requestingUrl)),
  );
  ses.setPermissionCheckHandler((_contents, permission, requestingOrigin) => permissionAllowed(permission, requestingOrigin));
  // The page talks to the host only over IPC; CSP already blocks these, this is the second lock.
  ses.webRequest.onBeforeRequest({ urls: ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*', 'file://*/*'] }, (_details, callback) =>
    callback({ cancel: true }),
  );
  protocol.handle(CAPSEM_SCHEME, serveApp);
}

// ---- the window --------------------------------------------------------------------------------

function createWindow(): BrowserWindow {
  const window = new BrowserWindow({
    width: 1360,
    height: 860,
    minWidth: 800,
    minHeight: 500,
    show: false,
    title: 'Capsem',
    backgroundColor: '#111318',
    webPreferences: {
      preload: PRELOAD,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
      devTools: !app.isPackaged,
    },
  });
  window.once('ready-to-show', () => window.show());
  window.webContents.on('did-start-loading', () => {
    pageLoaded = false;
  });
  window.webContents.on('did-finish-load', () => {
    pageLoaded = true;
    flushOpens();
  });
  window.webContents.on('render-process-gone', (_event, details) => {
    log(`the window's renderer is gone (${details.reason}); reloading`);
    if (details.reason !== 'clean-exit' && !window.isDestroyed()) window.webContents.reload();
  });
  window.on('closed', () => {
    if (win === window) win = null;
  });
  void window.loadURL(APP_ENTRY_URL);
  return window;
}

// ---- lifecycle ---------------------------------------------------------------------------------

// The second launch hands its argv over in additionalData (Chromium may reorder the argv it
// passes to 'second-instance') and exits; the first one focuses its window and opens the session.
if (!app.requestSingleInstanceLock({ argv: process.argv })) {
  app.quit();
} else {
  app.on('second-instance', (_event, argv, _cwd, additionalData) => {
    const data = SecondInstanceDataSchema.safeParse(additionalData);
    takeLaunch(parseLaunchArgs(data.success ? data.data.argv : argv), 'a second launch');
    focusWindow();
  });
  // macOS delivers capsem:// links as an event, possibly before `ready`.
  app.on('open-url', (event, url) => {
    event.preventDefault();
    takeLaunch(parseSessionLink(url), url);
    focusWindow();
  });
  takeLaunch(parseLaunchArgs(process.argv), 'the command line');

  app.whenReady().then(
    () => {
      // Packaged builds register capsem:// with the desktop (the .desktop file / Info.plist come
      // from electron-builder's `protocols`); from a checkout this would point the OS at bare Electron.
      if (app.isPackaged) app.setAsDefaultProtocolClient(CAPSEM_SCHEME);
      hardenSession();
      running = startCore();
      running.then(
        (r) => forwardEvents(r.core),
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          log(`the core did not start: ${message}`);
          dialog.showErrorBox('Capsem could not start its core', message);
        },
      );
      win = createWindow();
      app.on('activate', () => {
        if (win === null) win = createWindow();
        else focusWindow();
      });
    },
    (err: unknown) => log(`startup failed: ${String(err)}`),
  );

  app.on('window-all-closed', () => {
    // macOS keeps the app (and its VMs) alive with no window, as its apps do.
    if (process.platform !== 'darwin') app.quit();
  });

  // Told to go by a signal (Ctrl-C in the terminal that started it, a session manager's SIGTERM),
  // the app quits as from its menu, so the quit below stops the VMs and writes every row first.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => app.quit());

  // VMs and session writers must stop cleanly before the process exits, so the first quit is held
  // until the core has stopped.
  app.on('before-quit', (event) => {
    if (quitting || running === null) return;
    event.preventDefault();
    quitting = true;
    running
      .then(
        (r) => r.stop(),
        () => undefined,
      )
      .catch((err: unknown) => log(`the core did not stop cleanly: ${String(err)}`))
      .finally(() => app.quit());
  });
}
