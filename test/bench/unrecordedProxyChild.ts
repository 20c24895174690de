// Our proxy as proxyChild.ts runs it, policy, credential broker and all, but with every finished
// exchange thrown away instead of recorded: the proxy bench sets it beside ours and the bare relay
// in the same run, so what the recording costs on this machine is read off each run.
import { readFileSync } from 'node:fs';
import { openSessionCredentials } from '../../electron/credentials/credentialBroker.ts';
import { credentialRefOf, credentialRefSecret } from '../../electron/credentials/credentialRef.ts';
import { HomeKeyStore } from '../../electron/credentials/homeKeyStore.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { startMitmProxy } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { capsemHome } from '../../electron/store/paths.ts';

const home = capsemHome();
const policy = new PolicyStore(home);
const credentials = openSessionCredentials({
  env: process.env,
  store: new HomeKeyStore(home),
  settings: () => policy.policy.credentials,
  credentialRefOf: credentialRefOf(credentialRefSecret(home)),
});
const proxy = await startMitmProxy({
  ca: await CertificateAuthority.load(home),
  policy,
  resolve: parseResolveMap(process.env.CAPSEM_RESOLVE),
  upstreamCa: process.env.CAPSEM_UPSTREAM_CA_FILE ? [readFileSync(process.env.CAPSEM_UPSTREAM_CA_FILE, 'utf8')] : [],
  onExchange: () => undefined,
  credentials: credentials.broker,
});
process.stdout.write(`${proxy.url}\n`);
process.on('SIGTERM', () => process.exit(0));
