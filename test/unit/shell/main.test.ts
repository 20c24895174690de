import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { CoreStartOptions } from '../../../electron/app/appMain.ts';
import type { EventName, EventPayload, HostCore } from '../../../electron/contract/appContract.ts';

// The main process against a stand-in for Electron (the real one needs its runtime, which this
// machine cannot download): the window's web preferences, the guards on every webContents, the
// permission and request handlers, the IPC bridge, the folder picker, launch requests and the quit
// sequence.

type Handler = (...args: never[]) => unknown;
const fake = vi.hoisted(() => {
  const appHandlers = new Map<string, Handler>();
  const contentsHandlers = new Map<string, Handler>();
  const windows: { options: unknown; loaded: string[] }[] = [];
  const sent: [string, unknown][] = [];
  const mainFrame = { processId: 3, routingId: 1, url: 'capsem://app/index.html' };
  const webContents = {
    id: 7,
    mainFrame,
    isDestroyed: () => false,
    send: (channel: string, message: unknown) => sent.push([channel, message]),
    on: (name: string, h: Handler) => contentsHandlers.set(name, h),
    reload: () => undefined,
  };
  class BrowserWindow {
    readonly webContents = webContents;
    constructor(readonly options: unknown) {
      windows.push({ options, loaded: [] });
    }
    once(): void {}
    on(): void {}
    isDestroyed(): boolean {
      return false;
    }
    isMinimized(): boolean {
      return false;
    }
    show(): void {}
    focus(): void {}
    restore(): void {}
    loadURL(url: string): Promise<void> {
      windows.at(-1)!.loaded.push(url);
      return Promise.resolve();
    }
  }
  const state = {
    ipc: null as null | ((event: unknown, raw: unknown) => Promise<unknown>),
    pickFolder: null as null | ((event: unknown, raw: unknown) => Promise<unknown>),
    dialogs: [] as { window: unknown; options: unknown }[],
    dialogAnswer: { canceled: false, filePaths: ['/home/ada/code/app'] } as { canceled: boolean; filePaths: string[] },
    protocolHandler: null as null | ((request: Request) => Promise<Response>),
    privileged: [] as unknown[],
    permissionRequest: null as null | Handler,
    permissionCheck: null as null | Handler,
    beforeRequest: null as null | { filter: { urls: string[] }; handler: Handler },
    opened: [] as string[],
    quits: 0,
  };
  const electron = {
    app: {
      isPackaged: false,
      requestSingleInstanceLock: () => true,
      on: (name: string, h: Handler) => appHandlers.set(name, h),
      whenReady: () => Promise.resolve(),
      setAsDefaultProtocolClient: () => true,
      quit: () => {
        state.quits++;
      },
    },
    BrowserWindow,
    dialog: {
      showErrorBox: () => undefined,
      showOpenDialog: (window: unknown, options: unknown) => {
        state.dialogs.push({ window, options });
        return Promise.resolve(state.dialogAnswer);
      },
    },
    ipcMain: {
      handle: (channel: string, h: (event: unknown, raw: unknown) => Promise<unknown>) => {
        if (channel === 'capsem:call') state.ipc = h;
        if (channel === 'capsem:pick-folder') state.pickFolder = h;
      },
    },
    protocol: {
      registerSchemesAsPrivileged: (schemes: unknown[]) => state.privileged.push(...schemes),
      handle: (_scheme: string, h: (request: Request) => Promise<Response>) => (state.protocolHandler = h),
    },
    session: {
      defaultSession: {
        setPermissionRequestHandler: (h: Handler) => (state.permissionRequest = h),
        setPermissionCheckHandler: (h: Handler) => (state.permissionCheck = h),
        webRequest: { onBeforeRequest: (filter: { urls: string[] }, handler: Handler) => (state.beforeRequest = { filter, handler }) },
      },
    },
    shell: { openExternal: (url: string) => (state.opened.push(url), Promise.resolve()) },
    safeStorage: {
      isEncryptionAvailable: () => true,
      getSelectedStorageBackend: () => 'gnome_libsecret',
      encryptString: (text: string) => Buffer.from(`sealed:${text}`),
      decryptString: (bytes: Buffer) => bytes.toString().replace(/^sealed:/, ''),
    },
  };
  return { electron, appHandlers, contentsHandlers, windows, sent, mainFrame, state };
});
vi.mock('electron', () => fake.electron);

const core = vi.hoisted(() => ({
  calls: [] as [string, unknown][],
  listener: null as null | (<N extends EventName>(name: N, payload: EventPayload<N>) => void),
  stopped: 0,
  options: null as null | CoreStartOptions,
}));
vi.mock('../../../electron/shell/coreLoader.ts', () => ({
  importCore: async () => ({
    startAppCore: async (options: CoreStartOptions) => {
      core.options = options;
      const host: HostCore = {
        handle: async (name, params) => {
          core.calls.push([name, params]);
          return [];
        },
        subscribe: (listener) => {
          core.listener = listener;
          return () => undefined;
        },
      };
      return { core: host, stop: async () => void core.stopped++ };
    },
  }),
}));

const frameEvent = (frame: { processId: number; routingId: number; url: string } | null, senderId = 7) => ({
  sender: { id: senderId },
  senderFrame: frame,
});

beforeAll(async () => {
  const argv = process.argv;
  process.argv = ['/opt/Capsem/capsem-desktop', 'open', 'co-work1'];
  try {
    await import('../../../electron/shell/main.ts');
  } finally {
    process.argv = argv;
  }
  await new Promise((r) => setTimeout(r, 10));
});

describe('main process', () => {
  it('registers capsem: as a standard, secure scheme and serves the app from it', () => {
    expect(fake.state.privileged).toEqual([{ scheme: 'capsem', privileges: expect.objectContaining({ standard: true, secure: true }) }]);
    expect(fake.windows.map((w) => w.loaded)).toEqual([['capsem://app/index.html']]);
  });

  it('opens a sandboxed, isolated window without Node', () => {
    const prefs = (fake.windows[0]!.options as { webPreferences: Record<string, unknown> }).webPreferences;
    expect(prefs).toMatchObject({
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
    });
    // Beside the main bundle (dist/shell/ when built; the source folder under vitest).
    expect(String(prefs.preload)).toMatch(/\/preload\.cjs$/);
  });

  it('denies popups and navigation away, opening only allowlisted https links outside', () => {
    const handlers = new Map<string, Handler>();
    let openHandler: ((details: { url: string }) => { action: string }) | null = null;
    const contents = {
      setWindowOpenHandler: (h: typeof openHandler) => (openHandler = h),
      on: (name: string, h: Handler) => handlers.set(name, h),
    };
    (fake.appHandlers.get('web-contents-created') as (e: unknown, c: unknown) => void)({}, contents);
    expect(openHandler!({ url: 'https://docs.anthropic.com/x' })).toEqual({ action: 'deny' });
    expect(openHandler!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' });
    const navigate = (url: string) => {
      const event = {
        url,
        prevented: false,
        preventDefault() {
          this.prevented = true;
        },
      };
      (handlers.get('will-navigate') as (e: typeof event) => void)(event);
      return event.prevented;
    };
    expect(navigate('https://github.com/capsem')).toBe(true);
    expect(navigate('javascript:alert(1)')).toBe(true);
    expect(navigate('capsem://app/index.html')).toBe(false);
    expect(fake.state.opened).toEqual(['https://docs.anthropic.com/x', 'https://github.com/capsem']);
    const attach = {
      prevented: false,
      preventDefault() {
        this.prevented = true;
      },
    };
    (handlers.get('will-attach-webview') as (e: typeof attach) => void)(attach);
    expect(attach.prevented).toBe(true);
  });

  it('refuses permissions and outbound requests', () => {
    const granted: boolean[] = [];
    (fake.state.permissionRequest as (c: unknown, p: string, cb: (g: boolean) => void, d: unknown) => void)(
      {},
      'media',
      (g) => granted.push(g),
      { requestingUrl: 'capsem://app/' },
    );
    expect(granted).toEqual([false]);
    expect((fake.state.permissionCheck as (c: unknown, p: string, o: string) => boolean)(null, 'geolocation', 'capsem://app')).toBe(false);
    expect(fake.state.beforeRequest!.filter.urls).toEqual(
      expect.arrayContaining(['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*', 'file://*/*']),
    );
    const answers: unknown[] = [];
    (fake.state.beforeRequest!.handler as (d: unknown, cb: (r: unknown) => void) => void)({ url: 'https://evil.example/' }, (r) =>
      answers.push(r),
    );
    expect(answers).toEqual([{ cancel: true }]);
  });

  it('serves no other host on the app scheme, with the CSP on every answer', async () => {
    const res = await fake.state.protocolHandler!(new Request('capsem://session/co-work1'));
    expect(res.status).toBe(404);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
  });

  it("starts the core with the system keychain as the stored keys' cipher", () => {
    const cipher = core.options!.cipher!;
    expect(cipher.name).toBe(
      process.platform === 'linux'
        ? 'the system keychain (Electron safeStorage, gnome_libsecret)'
        : expect.stringContaining('Electron safeStorage'),
    );
    expect(cipher.decrypt(cipher.encrypt('sk-ant-key-0123456789'))).toBe('sk-ant-key-0123456789');
  });

  it('forwards calls from our main frame only', async () => {
    expect(await fake.state.ipc!(frameEvent(fake.mainFrame), { name: 'sessions.list', params: {} })).toEqual({ ok: true, result: [] });
    expect(core.calls).toEqual([['sessions.list', {}]]);
    const iframe = { processId: 3, routingId: 9, url: 'capsem://app/index.html' };
    for (const event of [
      frameEvent(iframe),
      frameEvent(null),
      frameEvent(fake.mainFrame, 8),
      frameEvent({ ...fake.mainFrame, url: 'https://evil.example/' }),
    ])
      expect(await fake.state.ipc!(event, { name: 'sessions.list', params: {} })).toMatchObject({
        ok: false,
        error: { code: 'forbidden' },
      });
    expect(core.calls).toHaveLength(1);
  });

  it('opens the folder picker on our window for our main frame only, and answers the chosen folder or null', async () => {
    expect(await fake.state.pickFolder!(frameEvent(fake.mainFrame), undefined)).toBe('/home/ada/code/app');
    expect(fake.state.dialogs).toEqual([
      { window: expect.any(Object), options: expect.objectContaining({ properties: ['openDirectory', 'createDirectory'] }) },
    ]);
    fake.state.dialogAnswer = { canceled: true, filePaths: [] };
    expect(await fake.state.pickFolder!(frameEvent(fake.mainFrame), undefined)).toBeNull();
    const iframe = { processId: 3, routingId: 9, url: 'capsem://app/index.html' };
    for (const event of [frameEvent(iframe), frameEvent(null), frameEvent({ ...fake.mainFrame, url: 'https://evil.example/' })])
      expect(await fake.state.pickFolder!(event, undefined)).toBeNull();
    expect(fake.state.dialogs).toHaveLength(2);
  });

  it('sends the core events to the window', () => {
    fake.sent.length = 0;
    core.listener!('terminal.output', { id: 'a', data: 'hi' });
    expect(fake.sent).toEqual([['capsem:event', { name: 'terminal.output', payload: { id: 'a', data: 'hi' } }]]);
  });

  it('hands the launch request to the page once it has loaded, and a second launch after it', () => {
    fake.sent.length = 0;
    (fake.contentsHandlers.get('did-finish-load') as () => void)();
    expect(fake.sent).toEqual([['capsem:event', { name: 'app.open', payload: { query: 'co-work1' } }]]);
    const second = fake.appHandlers.get('second-instance') as (e: unknown, argv: string[], cwd: string, data: unknown) => void;
    second({}, ['/opt/Capsem/capsem-desktop', '--flag'], '/', { argv: ['/opt/Capsem/capsem-desktop', 'capsem://session/co-work2'] });
    second({}, ['/opt/Capsem/capsem-desktop', 'open', 'co-work3'], '/', { unexpected: true });
    second({}, ['/opt/Capsem/capsem-desktop', 'capsem://evil/x'], '/', null);
    expect(fake.sent.slice(1)).toEqual([
      ['capsem:event', { name: 'app.open', payload: { query: 'co-work2' } }],
      ['capsem:event', { name: 'app.open', payload: { query: 'co-work3' } }],
    ]);
  });

  it('stops the core before quitting', async () => {
    const event = {
      prevented: false,
      preventDefault() {
        this.prevented = true;
      },
    };
    (fake.appHandlers.get('before-quit') as (e: typeof event) => void)(event);
    expect(event.prevented).toBe(true);
    await vi.waitFor(() => expect(fake.state.quits).toBe(1));
    expect(core.stopped).toBe(1);
    const again = {
      prevented: false,
      preventDefault() {
        this.prevented = true;
      },
    };
    (fake.appHandlers.get('before-quit') as (e: typeof again) => void)(again);
    expect(again.prevented).toBe(false);
  });

  it('quits through the same sequence on SIGTERM and SIGINT, instead of dying with its sessions unwritten', () => {
    const before = fake.state.quits;
    process.emit('SIGTERM', 'SIGTERM');
    process.emit('SIGINT', 'SIGINT');
    expect(fake.state.quits).toBe(before + 2);
  });
});
