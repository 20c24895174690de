// Loaded into Node programs that `capsem record` runs (NODE_OPTIONS=--import): Node's built-in
// fetch ignores HTTP(S)_PROXY, so route it through the proxy the environment names.
import { EnvHttpProxyAgent, setGlobalDispatcher } from 'undici';

setGlobalDispatcher(new EnvHttpProxyAgent());
