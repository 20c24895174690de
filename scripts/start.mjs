// `npm start`: the desktop app. With an Electron runtime it launches the Electron shell (the
// package's "main"); without one, or with `npm start -- --browser`, it runs browser mode: the same
// renderer and core on 127.0.0.1, printed as one `Capsem UI: http://127.0.0.1:PORT/?token=…` line.
// `npm run dev` (`--dev`): the core in browser mode plus Vite's dev server with HMR, which proxies
// /ws to the core (vite.config.ts reads CAPSEM_CORE_PORT).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const wantBrowser = args.includes('--browser');
const dev = args.includes('--dev');

function electronRuntime() {
  const dir = join(root, 'node_modules', 'electron');
  if (!existsSync(dir)) return { ok: false, why: 'the electron package is not installed' };
  const pathFile = join(dir, 'path.txt');
  if (!existsSync(pathFile))
    return {
      ok: false,
      why: 'the Electron runtime was never downloaded (electron fetches it on first launch; this machine has no route to its release host)',
    };
  const binary = join(dir, 'dist', readFileSync(pathFile, 'utf8').trim());
  if (!existsSync(binary)) return { ok: false, why: `the Electron runtime is missing at ${binary}` };
  // Electron needs a display on Linux; without one the window cannot open.
  if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)
    return { ok: false, why: 'there is no display (DISPLAY and WAYLAND_DISPLAY are unset)' };
  return { ok: true, binary };
}

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newestMtime(join(path, name))), stat.mtimeMs);
}

/** Builds the renderer when dist/renderer is missing or older than its sources. */
function ensureRenderer() {
  const built = join(root, 'dist', 'renderer', 'index.html');
  const sources = Math.max(newestMtime(join(root, 'renderer')), newestMtime(join(root, 'vite.config.ts')));
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  console.error(existsSync(built) ? 'capsem: the renderer sources changed; rebuilding it' : 'capsem: building the renderer (first run)');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const command = pkg.scripts?.['build:renderer'] ? ['npm', ['run', '--silent', 'build:renderer']] : ['npx', ['vite', 'build']];
  const result = spawnSync(command[0], command[1], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) console.error('capsem: the renderer did not build; the page will say so until it does');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Runs a child and forwards Ctrl-C/termination to it, exiting with its code. */
function supervise(children) {
  let exiting = false;
  const stopAll = (signal) => {
    if (exiting) return;
    exiting = true;
    for (const child of children) if (child.exitCode === null) child.kill(signal);
  };
  process.on('SIGINT', () => stopAll('SIGINT'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  for (const child of children) {
    child.on('exit', (code, signal) => {
      stopAll('SIGTERM');
      if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(code ?? (signal ? 1 : 0));
    });
  }
}

function coreArgs(extra) {
  // --no-spare-vm: no VM booted ahead for this run (Settings keep their choice).
  const spare = args.includes('--no-spare-vm') ? ['--no-spare-vm'] : [];
  return ['--import', 'tsx', join(root, 'electron', 'app', 'browserMain.ts'), ...extra, ...spare];
}

const runtime = electronRuntime();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

if (dev) {
  const corePort = await freePort();
  const devPort = Number(process.env.CAPSEM_DEV_PORT ?? 5173);
  const token = randomBytes(32).toString('base64url');
  const env = { ...process.env, CAPSEM_UI_TOKEN: token, CAPSEM_CORE_PORT: String(corePort) };
  const core = spawn(process.execPath, coreArgs(['--port', String(corePort), '--dev-port', String(devPort), '--reason', 'npm run dev']), {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const vite = spawn('npx', ['vite', '--port', String(devPort), '--strictPort'], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  console.log(`Capsem UI: http://127.0.0.1:${devPort}/?token=${token}`);
  console.error(`capsem: Vite dev server on ${devPort} with HMR; the core on ${corePort} (the page's /ws is proxied there)`);
  supervise([core, vite]);
} else if (runtime.ok && !wantBrowser && pkg.main) {
  if (!existsSync(join(root, pkg.main))) {
    console.error(`capsem: the Electron shell is not built (${pkg.main} is missing); building it`);
    const built = pkg.scripts?.['build:shell']
      ? spawnSync('npm', ['run', '--silent', 'build:shell'], { cwd: root, stdio: 'inherit' })
      : { status: 1 };
    if (built.status !== 0) console.error('capsem: could not build the Electron shell; see the output above');
  }
  ensureRenderer();
  supervise([spawn(runtime.binary, [root, ...args], { cwd: root, stdio: 'inherit' })]);
} else {
  const reason = wantBrowser
    ? 'started with --browser'
    : runtime.ok
      ? 'the package names no Electron entry'
      : `no Electron runtime: ${runtime.why}`;
  console.error(`capsem: browser mode (${reason})`);
  ensureRenderer();
  const core = spawn(process.execPath, coreArgs(['--reason', reason]), { cwd: root, stdio: 'inherit' });
  supervise([core]);
}
