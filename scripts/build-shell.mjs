// `npm run build:shell`: bundles the Electron main process and preload to CommonJS under
// dist/shell/. Electron cannot load TypeScript, and a sandboxed preload cannot require() anything
// but Electron's own renderer modules, so each is one self-contained file. `electron` stays
// external (the runtime provides it), and so does tsx, which the main process uses only to load
// the host core from sources (the core is not bundled: it locates its resources and worker
// modules relative to its own files).
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const common = {
  absWorkingDir: root,
  bundle: true,
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
  // Electron 45 ships Node 22 and Chromium 140.
  external: ['electron', 'tsx', 'tsx/*'],
};

await Promise.all([
  build({ ...common, entryPoints: ['electron/shell/main.ts'], outfile: 'dist/shell/main.cjs', platform: 'node', target: 'node22' }),
  build({
    ...common,
    entryPoints: ['electron/shell/preload.ts'],
    outfile: 'dist/shell/preload.cjs',
    platform: 'node',
    target: 'chrome140',
  }),
]);
console.log('built dist/shell/main.cjs and dist/shell/preload.cjs');
