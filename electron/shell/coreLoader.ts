import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// The host core is not bundled into the shell: it finds its guest image recipe, agent binary and
// resources relative to its own modules (import.meta.url) and starts workers from sibling files,
// which a single-file bundle would break. So the shell loads it at run time the way bin/capsem.mjs
// loads the CLI: compiled JavaScript under dist/electron/ when present, else the TypeScript
// sources through tsx (a runtime dependency).

import type * as AppMain from '../app/appMain.ts';

export type { CoreStartOptions, RunningCore } from '../app/appMain.ts';

/** Which file holds the core's entry: compiled JS if it exists, else the TypeScript source. */
export function coreEntry(
  appRoot: string,
  exists: (path: string) => boolean = existsSync,
): { readonly path: string; readonly typescript: boolean } {
  const compiled = join(appRoot, 'dist', 'electron', 'app', 'appMain.js');
  if (exists(compiled)) return { path: compiled, typescript: false };
  return { path: join(appRoot, 'electron', 'app', 'appMain.ts'), typescript: true };
}

type CoreModule = typeof AppMain;

/** Imports the core's entry module (registering tsx first for sources). */
export async function importCore(appRoot: string): Promise<CoreModule> {
  const entry = coreEntry(appRoot);
  if (entry.typescript) {
    const tsx = await import('tsx/esm/api');
    tsx.register();
  }
  const loaded: unknown = await import(pathToFileURL(entry.path).href);
  return loaded as CoreModule;
}
