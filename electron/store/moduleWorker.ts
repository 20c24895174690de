import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker from a sibling module. From sources (tsx, vitest) the worker needs the tsx
 * loader registered inside it first; Node 20 does not pass `--import` hooks on to workers.
 */
export function startModuleWorker(moduleUrl: URL, options: WorkerOptions = {}): Worker {
  if (!moduleUrl.pathname.endsWith('.ts')) return new Worker(moduleUrl, options);
  // Resolved here, against this file: an eval worker resolves bare names against the current
  // directory, so from a user's own project folder 'tsx' was not found.
  const tsx = import.meta.resolve('tsx/esm/api');
  // And our own tsconfig, not the current directory's: a user's project tsconfig (its paths or
  // baseUrl) would otherwise decide how the worker's imports resolve.
  const tsconfig = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register({ tsconfig: ${JSON.stringify(tsconfig)} }); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}

/** The sibling module with the same extension as the caller, so compiled builds load `.js`. */
export function siblingModule(callerUrl: string, baseName: string): URL {
  const ext = callerUrl.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./${baseName}${ext}`, callerUrl);
}
