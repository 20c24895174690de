import { describe, expect, it } from 'vitest';
import type { CredentialBroker } from '../../../electron/credentials/credentialBroker.ts';
import { admit, brokerRequest, entryRefusal, type ProxyPath } from '../../../electron/proxy/admission.ts';
import { ProxyConnections } from '../../../electron/proxy/connections.ts';
import { decide, parsePolicy } from '../../../electron/policy/policy.ts';
import { proxyUrl } from '../../../electron/proxy/proxyAuth.ts';

// The gates every request and tunnel passes before anything leaves, without a socket: the
// session's credentials, a session that can no longer record, where the request goes, the policy
// on that destination, and the credential broker.

const rules = [
  { id: 'deny-evil', action: 'deny', domains: ['evil.example'] },
  { id: 'allow-api', action: 'allow', domains: ['api.example.com'] },
  { id: 'allow-all', action: 'allow', domains: ['*'] },
];
const document = parsePolicy(JSON.stringify({ version: 1, rules }), 'test');
const policy = { decide: (host: string, port: number, method: string) => decide(document, host, port, method) };

function basic(token: string): string {
  const credentials = new URL(proxyUrl(1, token));
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

function proxyWith(refusal: string | null = null): ProxyPath {
  return { connections: new ProxyConnections('tok'), policy, refusal: () => refusal, bodyCap: 1024, record: () => undefined };
}

describe('entry gates', () => {
  it('asks a connection without the session credentials for them (407), and counts it', () => {
    const proxy = proxyWith();
    const refused = entryRefusal(proxy, {}, {});
    expect(refused?.status).toBe(407);
    expect(refused?.headers).toEqual({ 'proxy-authenticate': 'Basic realm="capsem"' });
    expect(refused?.body).toContain('HTTPS_PROXY');
    expect(entryRefusal(proxy, {}, { 'proxy-authorization': basic('not-it') })?.status).toBe(407);
    expect(proxy.connections.unauthenticated).toBe(2);
  });

  it('lets a connection in once it has authenticated, and then without credentials', () => {
    const proxy = proxyWith();
    const connection = {};
    expect(entryRefusal(proxy, connection, { 'proxy-authorization': basic('tok') })).toBeNull();
    expect(entryRefusal(proxy, connection, {})).toBeNull();
    expect(proxy.connections.unauthenticated).toBe(0);
  });

  it('refuses every request with 507 while the session cannot be recorded, naming why', () => {
    const proxy = proxyWith('the disk is full');
    const connection = {};
    proxy.connections.adopt(connection, { processName: 'curl' }, 'aes-gcm-first');
    const refused = entryRefusal(proxy, connection, {});
    expect(refused).toEqual({ status: 507, body: 'capsem: this session cannot be recorded: the disk is full; request refused\n' });
  });
});

describe('admission', () => {
  it('admits an absolute-form request with its destination, path and query apart, and the deciding rule', () => {
    const admission = admit(policy, undefined, { method: 'POST', url: 'http://api.example.com/v1/messages?beta=true' }, 'request', {
      host: 'api.example.com',
    });
    expect(admission.admitted).toBe(true);
    if (!admission.admitted) return;
    expect(admission.dest).toMatchObject({ scheme: 'http', host: 'api.example.com', port: 80, path: '/v1/messages?beta=true' });
    expect(admission.decision).toEqual({ action: 'allow', rule: 'allow-api', explicit: true });
    expect(admission.request).toMatchObject({
      host: 'api.example.com',
      port: 80,
      method: 'POST',
      path: '/v1/messages',
      query: 'beta=true',
      kind: 'request',
    });
  });

  it('refuses a policy-denied destination with 403 naming the rule, recorded as denied', () => {
    const admission = admit(policy, { host: 'evil.example', port: 443, tls: true }, { method: 'GET', url: '/x' }, 'websocket', {
      host: 'evil.example',
    });
    expect(admission).toMatchObject({
      admitted: false,
      status: 403,
      body: 'capsem: evil.example:443 is blocked by policy rule deny-evil\n',
    });
    expect(admission.request).toMatchObject({ host: 'evil.example', scheme: 'https', kind: 'websocket' });
    if (admission.admitted) return;
    expect(admission.outcome).toEqual({
      decision: 'denied',
      status: 403,
      matchedRule: 'deny-evil',
      error: { kind: 'destination_denied', message: 'blocked by deny-evil' },
    });
  });

  it("refuses a Host that names another host than the tunnel's with 421, recording the target as it came", () => {
    const admission = admit(policy, { host: 'api.example.com', port: 80, tls: false }, { url: '/a?b=c' }, 'request', {
      host: 'evil.example',
    });
    expect(admission).toMatchObject({ admitted: false, status: 421 });
    expect(admission.request).toMatchObject({ method: 'GET', scheme: 'http', path: '/a', query: 'b=c' });
    if (admission.admitted) return;
    expect(admission.outcome).toMatchObject({
      decision: 'denied',
      matchedRule: 'proxy.bad-request',
      error: { kind: 'misdirected_request' },
    });
  });

  it('records a refused absolute-form request as what it was: its scheme, and its path with the query apart', () => {
    const misdirected = admit(policy, undefined, { url: 'http://api.example.com/v1/messages?beta=true' }, 'request', {
      host: 'evil.example',
    });
    expect(misdirected).toMatchObject({ admitted: false, status: 421 });
    expect(misdirected.request).toMatchObject({
      scheme: 'http',
      host: 'api.example.com',
      port: 80,
      path: '/v1/messages',
      query: 'beta=true',
    });
    const secure = admit(policy, undefined, { url: 'https://api.example.com:8443/x?y=1' }, 'request', { host: 'evil.example' });
    expect(secure.request).toMatchObject({ scheme: 'https', port: 8443, path: '/x', query: 'y=1' });
    // A URL that does not parse keeps its scheme and is recorded as it came.
    expect(admit(policy, undefined, { url: 'http://a b/' }, 'request', {}).request).toMatchObject({ scheme: 'http', path: 'http://a b/' });
    expect(admit(policy, undefined, { url: '/origin-form' }, 'request', {}).request).toMatchObject({
      scheme: 'http',
      path: '/origin-form',
    });
  });

  it('holds an HTTP/2 request to its tunnel through :authority as well as Host', () => {
    const tunnel = { host: 'api.example.com', port: 443, tls: true };
    expect(admit(policy, tunnel, { url: '/' }, 'request', { host: 'api.example.com' }, 'api.example.com').admitted).toBe(true);
    expect(admit(policy, tunnel, { url: '/' }, 'request', { host: 'api.example.com' }, 'evil.example')).toMatchObject({
      admitted: false,
      status: 421,
    });
  });
});

describe('brokering', () => {
  const dest = { scheme: 'https' as const, host: 'api.example.com', port: 443, path: '/v1?k=1', authority: 'api.example.com' };

  it('sends the request as it came when the session has no broker', () => {
    const headers = { authorization: 'Bearer x' };
    expect(brokerRequest(undefined, dest, headers)).toEqual({ headers, path: '/v1?k=1', uses: [], refusal: null });
  });

  it("takes the broker's headers, path and refusal when there is one, judged on the scheme, host and port", () => {
    const broker = {
      request: (to: { scheme: string; host: string; port: number }, headers: Record<string, string>, path: string) => ({
        headers: { ...headers, 'x-to': `${to.scheme}://${to.host}:${to.port}` },
        path: `${path}&real=1`,
        uses: [],
        refusal: 'no',
      }),
    } as unknown as CredentialBroker;
    expect(brokerRequest(broker, dest, {})).toEqual({
      headers: { 'x-to': 'https://api.example.com:443' },
      path: '/v1?k=1&real=1',
      uses: [],
      refusal: 'no',
    });
  });
});
