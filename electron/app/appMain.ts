import { readAppSettings, spareVmForcedOff } from '../store/appSettings.ts';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { HostCore } from '../contract/appContract.ts';
import type { KeyCipher } from '../credentials/encryptedKeyStore.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import type { VmChoice } from '../owner/vmHosting.ts';
import { capsemHome, ensureHome, type CapsemHome } from '../store/paths.ts';
import { AppCore } from './appCore.ts';
import { AlreadyRunningError, ownHome } from './appOwnership.ts';
import { oncePerPeer } from '../platform/loopbackListener.ts';
import { startBrowserServer } from './browserServer.ts';

// The desktop app's core, started as the owner of CAPSEM_HOME. The Electron shell calls
// startAppCore (through its core loader) and carries calls over IPC; browser mode
// (runBrowserMode, from browserMain.ts) serves the renderer and the same calls on loopback.

export const APP_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const RENDERER_DIR = join(APP_ROOT, 'dist', 'renderer');

export interface RunningCore {
  readonly core: HostCore;
  /** Stops the VMs in order and releases CAPSEM_HOME. */
  stop(): Promise<void>;
}

export interface CoreStartOptions {
  /** CAPSEM_HOME override; undefined means CAPSEM_HOME from the environment, then ~/.capsem. */
  readonly home: string | undefined;
  /** Where packaged data lives; null from a checkout. The core finds its data beside its modules for now. */
  readonly resourcesDir: string | null;
  /** Tests run VMs on the host agent instead of QEMU. */
  readonly vm?: VmChoice;
  readonly command?: string;
  readonly note?: (text: string) => void;
  /** The system keychain, from the Electron shell: stored keys are encrypted with it. None in browser mode. */
  readonly cipher?: KeyCipher | null;
  /** The app's command line, for its flags (--no-spare-vm). */
  readonly argv?: readonly string[];
}

export interface StartedCore extends RunningCore {
  readonly core: AppCore;
  readonly home: CapsemHome;
}

export async function startAppCore(options: CoreStartOptions): Promise<StartedCore> {
  const home = capsemHome(options.home === undefined ? process.env : { ...process.env, CAPSEM_HOME: options.home });
  ensureHome(home);
  // One store for Settings and the VM host, so a key saved in the window is the one sessions read.
  const keyStore = new HomeKeyStore(home, options.cipher ?? null);
  const spareVmOff = spareVmForcedOff(process.env, options.argv ?? []);
  const core = new AppCore({ home, keyStore, spareVmOff });
  // The app keeps a VM booted ahead (the CLI never does): Settings decide, unless a flag turned it off for this run.
  // Tests that boot on another backend or plan get no spare unless they ask: a spare is always QEMU and the cached image.
  const custom = options.vm?.backend !== undefined || options.vm?.plan !== undefined;
  const spareVm = options.vm?.spareVm ?? (custom ? () => false : () => spareVmOff === null && readAppSettings(home).spareVm);
  let owner;
  try {
    owner = await ownHome(
      home,
      core,
      options.command ?? 'capsem desktop app',
      { ...options.vm, keyStore, spareVm, onSpareProblem: options.note },
      options.note,
    );
  } catch (err) {
    core.close();
    throw err;
  }
  return {
    core,
    home,
    async stop() {
      await owner.close();
      core.close();
    },
  };
}

// ---- browser mode ----------------------------------------------------------------------------

/** Where a running browser-mode app says its UI is, so a second launch can point there. */
const UiFileSchema = z.object({ pid: z.number(), url: z.string() });

function uiFile(home: CapsemHome): string {
  return join(home.runDir, 'ui.json');
}

export function readUiFile(home: CapsemHome): z.infer<typeof UiFileSchema> | null {
  try {
    return UiFileSchema.parse(JSON.parse(readFileSync(uiFile(home), 'utf8')));
  } catch {
    return null;
  }
}

export interface BrowserModeOptions {
  readonly home?: string;
  readonly port?: number;
  readonly reason: string;
  readonly token?: string;
  readonly devPort?: number;
  readonly rendererDir?: string;
  readonly vm?: VmChoice;
  readonly out?: (line: string) => void;
  readonly err?: (line: string) => void;
}

export interface BrowserApp {
  readonly url: string;
  readonly core: AppCore;
  stop(): Promise<void>;
}

/** Starts the core and the UI server; null when another app already runs (it printed where). */
export async function runBrowserMode(options: BrowserModeOptions): Promise<BrowserApp | null> {
  const out = options.out ?? ((line) => process.stdout.write(`${line}\n`));
  const err = options.err ?? ((line) => process.stderr.write(`${line}\n`));
  let started: StartedCore;
  try {
    started = await startAppCore({
      home: options.home,
      resourcesDir: null,
      vm: options.vm,
      command: 'capsem desktop app (browser mode)',
      argv: process.argv,
      note: (t) => err(`capsem: ${t}`),
    });
  } catch (e) {
    if (!(e instanceof AlreadyRunningError)) throw e;
    const home = capsemHome(options.home === undefined ? process.env : { ...process.env, CAPSEM_HOME: options.home });
    const ui = readUiFile(home);
    if (ui && ui.pid === e.pid) out(`Capsem UI: ${ui.url}`);
    err(`capsem: ${e.message}${ui && ui.pid === e.pid ? '; its UI is above' : ' in its own window'}`);
    return null;
  }
  const server = await startBrowserServer({
    core: started.core,
    rendererDir: options.rendererDir ?? RENDERER_DIR,
    port: options.port,
    token: options.token,
    modeReason: options.reason,
    devPort: options.devPort,
    home: started.home,
    onRefused: oncePerPeer((reason) => err(`capsem: browser mode ${reason}`)),
  }).catch(async (e: unknown) => {
    await started.stop();
    throw e;
  });
  const file = uiFile(started.home);
  writeFileSync(file, JSON.stringify({ pid: process.pid, url: server.url }), { mode: 0o600 });
  chmodSync(file, 0o600);
  out(`Capsem UI: ${server.url}`);
  return {
    url: server.url,
    core: started.core,
    async stop() {
      if (readUiFile(started.home)?.pid === process.pid) rmSync(file, { force: true });
      await server.close();
      await started.stop();
    },
  };
}
