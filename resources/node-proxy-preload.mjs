// Loaded into Node programs that `capsem record` runs and into every Node program in the agent
// image (NODE_OPTIONS=--import): Node's built-in fetch and its http/https modules ignore
// HTTP(S)_PROXY, so route them through the proxy the environment names.
import { EnvHttpProxyAgent, setGlobalDispatcher } from 'undici';
import './node-proxy-agents.mjs';

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
