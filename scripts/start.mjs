// `npm start`: the desktop app where an Electron runtime is present. The window, the typed IPC
// and browser mode are the desktop-app capability; until it lands this says plainly what runs.
import { existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function electronRuntime() {
  const dir = `${root}node_modules/electron`;
  if (!existsSync(dir)) return { ok: false, why: 'the electron package is not installed' };
  const pathFile = `${dir}/path.txt`;
  if (!existsSync(pathFile)) return { ok: false, why: 'the Electron runtime was never downloaded (electron fetches it on first launch; this machine has no route to its release host)' };
  const binary = `${dir}/dist/${readFileSync(pathFile, 'utf8').trim()}`;
  return existsSync(binary) ? { ok: true, binary } : { ok: false, why: `the Electron runtime is missing at ${binary}` };
}

const runtime = electronRuntime();
console.log(runtime.ok ? `Electron runtime: ${runtime.binary}` : `Electron runtime not available: ${runtime.why}.`);
console.log('The desktop window and browser mode are not built yet (desktop-app issue). The session store and CLI are:');
console.log('  npx capsem list        sessions and their figures');
console.log('  npx capsem check NAME  integrity and telemetry checks on one session');
console.log('  npx capsem record -- CMD  record a program\'s HTTPS through the proxy (no sandbox)');
console.log('  npx capsem api         the session events API on 127.0.0.1:47601');
console.log('  npx capsem dev seed    sample sessions to look at');
console.log('');
const list = spawnSync(process.execPath, [`${root}bin/capsem.mjs`, 'list'], { stdio: 'inherit' });
process.exitCode = list.status ?? 1;
