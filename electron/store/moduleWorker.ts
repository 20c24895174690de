import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker from a sibling module. From sources (tsx, vitest) the worker needs the tsx
 * loader registered inside it first; Node 20 does not pass `--import` hooks on to workers.
 */
export function startModuleWorker(moduleUrl: URL, options: WorkerOptions = {}): Worker {
  if (!moduleUrl.pathname.endsWith('.ts')) return new Worker(moduleUrl, options);
  const bootstrap = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}

/** The sibling module with the same extension as the caller, so compiled builds load `.js`. */
export function siblingModule(callerUrl: string, baseName: string): URL {
  const ext = callerUrl.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./${baseName}${ext}`, callerUrl);
}
