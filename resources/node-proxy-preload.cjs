// Loaded into Node programs that `capsem record` runs and into every Node program in the agent
// image (NODE_OPTIONS=--require): Node's built-in fetch and its http/https modules ignore
// HTTP(S)_PROXY, so route them through the proxy the environment names.
//
// In every thread, too. A --require preload in NODE_OPTIONS runs in each worker thread, where an
// --import one skips workers whose code is given as a string (`eval: true`); each thread has its
// own fetch dispatcher and global agents, so each must load this. A worker takes NODE_OPTIONS and
// the proxy variables from the environment it is given: one given an environment of its own gets
// them added to it, as they were given to this process.
'use strict';
const { EnvHttpProxyAgent, setGlobalDispatcher } = require('undici');
const { syncBuiltinESMExports } = require('node:module');
const workerThreads = require('node:worker_threads');
require('./node-proxy-agents.cjs');

// undici flags EnvHttpProxyAgent as experimental on every construction; that notice would land on
// the stderr of every recorded program, so only it is dropped.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (warning, ...rest) => {
  const code = typeof rest[0] === 'object' && rest[0] !== null ? rest[0].code : rest[1];
  if (code === 'UNDICI-EHPA') return;
  emitWarning(warning, ...rest);
};
setGlobalDispatcher(new EnvHttpProxyAgent());
process.emitWarning = emitWarning;

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
/** The proxy settings this process was started with, before the program could change them. */
const proxyEnv = Object.fromEntries(PROXY_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]));
/** This preload as NODE_OPTIONS names it (double quotes, with `"` and `\` escaped, as Node parses them). */
const preloadOption = `--require "${__filename.replace(/["\\]/g, '\\$&')}"`;

/** A worker's own environment with what routes it added; SHARE_ENV and the default (a copy of process.env) have it already. */
function routedEnv(env) {
  if (typeof env !== 'object' || env === null) return env;
  const nodeOptions = typeof env.NODE_OPTIONS === 'string' ? env.NODE_OPTIONS : '';
  return {
    ...env,
    ...proxyEnv,
    NODE_OPTIONS: nodeOptions.includes(__filename) ? nodeOptions : `${nodeOptions} ${preloadOption}`.trim(),
  };
}

const NodeWorker = workerThreads.Worker;
workerThreads.Worker = class Worker extends NodeWorker {
  constructor(filename, options) {
    super(filename, options && options.env !== undefined ? { ...options, env: routedEnv(options.env) } : options);
  }
};
// `import { Worker } from 'node:worker_threads'` elsewhere sees it too.
syncBuiltinESMExports();
