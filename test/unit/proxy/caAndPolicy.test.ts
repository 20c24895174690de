import { createPublicKey, X509Certificate } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { connect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { caFiles, CertificateAuthority, serialFrom } from '../../../electron/proxy/certificateAuthority.ts';
import { recordedHeaders } from '../../../electron/proxy/exchange.ts';
import { parseAuthority } from '../../../electron/proxy/requestTarget.ts';
import { isPrivateAddress } from '../../../electron/policy/addresses.ts';
import { decide, decideName, DEFAULT_POLICY_PATH, parsePolicy, PolicyStore } from '../../../electron/policy/policy.ts';
import { parseResolveMap } from '../../../electron/proxy/resolveMap.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

describe('certificate authority', () => {
  it('is created once with a 0600 key, reused across runs, and renewed near expiry', async () => {
    const first = await CertificateAuthority.load(home);
    const files = caFiles(home);
    expect(statSync(files.keyPath).mode & 0o777).toBe(0o600);
    const again = await CertificateAuthority.load(home);
    expect(again.certPem).toBe(first.certPem);
    expect(first.cert.publicKey.algorithm).toMatchObject({ name: 'ECDSA', namedCurve: 'P-256' });
    const elsewhere = tempHome();
    const original = await CertificateAuthority.load(elsewhere);
    const nearExpiry = new Date(original.cert.notAfter.getTime() - 10 * 86_400_000);
    const renewed = await CertificateAuthority.load(elsewhere, nearExpiry);
    expect(renewed.certPem).not.toBe(original.certPem);
    expect(renewed.cert.notAfter.getTime()).toBeGreaterThan(original.cert.notAfter.getTime());
    elsewhere.remove();
  });

  it('issues leaves a strict TLS client accepts for names and IP addresses, and caches them', async () => {
    const ca = await CertificateAuthority.load(home);
    for (const host of ['api.example.test', '127.0.0.1']) {
      const leaf = await ca.issueLeaf(host);
      const server = createServer(
        { cert: leaf.certPem, key: leaf.keyPem, SNICallback: (name, cb) => void ca.contextFor(name || host).then((c) => cb(null, c)) },
        (_req, res) => res.end('ok'),
      );
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const authorized = await new Promise<boolean>((resolve, reject) => {
        const socket = connect(
          {
            host: '127.0.0.1',
            port: (server.address() as AddressInfo).port,
            servername: host === '127.0.0.1' ? undefined : host,
            ca: ca.certPem,
            ...(host === '127.0.0.1' ? { checkServerIdentity: () => undefined } : {}),
          },
          () => {
            resolve(socket.authorized);
            socket.destroy();
          },
        );
        socket.on('error', reject);
      });
      server.close();
      expect(authorized, host).toBe(true);
    }
    const before = ca.cachedLeaves;
    await ca.contextFor('api.example.test');
    expect(ca.cachedLeaves).toBe(before);
  });

  it('makes serials that are positive and minimal DER integers, so every leaf parses (property)', async () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (random) => {
        const first = Number.parseInt(serialFrom(random).slice(0, 2), 16);
        return first >= 0x01 && first <= 0x7f;
      }),
    );
    const ca = await CertificateAuthority.load(home);
    for (let i = 0; i < 300; i++) {
      const leaf = await ca.issueLeaf(`leaf-${i}.parse.test`);
      expect(new X509Certificate(leaf.certPem).subject).toBe(`CN=leaf-${i}.parse.test`);
    }
  });

  it('serves a burst of first connections with leaves that match their key, one leaf per host', async () => {
    // A fresh CA meeting many connections at once: each must get a certificate and key that pair.
    const fresh = tempHome();
    const ca = await CertificateAuthority.load(fresh);
    const hosts = ['a.burst.test', 'b.burst.test', 'c.burst.test'];
    const contexts = await Promise.all(Array.from({ length: 30 }, (_, i) => ca.contextFor(hosts[i % 3]!)));
    expect(ca.cachedLeaves).toBe(3);
    expect(new Set(contexts).size).toBe(3);
    const leaves = await Promise.all(hosts.map((h) => ca.issueLeaf(h)));
    for (const leaf of leaves)
      expect(createPublicKey(leaf.keyPem).export({ format: 'jwk' })).toEqual(
        new X509Certificate(leaf.certPem).publicKey.export({ format: 'jwk' }),
      );
    fresh.remove();
  });
});

describe('policy', () => {
  const policy = parsePolicy(
    JSON.stringify({
      version: 1,
      rules: [
        { id: 'deny-post-to-uploads', action: 'deny', domains: ['uploads.example.com'], methods: ['POST'] },
        { id: 'allow-internal', action: 'allow', domains: ['*.corp.internal'], ports: [443] },
        { id: 'deny-evil', action: 'deny', domains: ['evil.example', '*.evil.example'] },
        { id: 'allow-all', action: 'allow', domains: ['*'] },
      ],
    }),
    'test',
  );

  it('takes the first rule that matches domain, port and method', () => {
    expect(decide(policy, 'uploads.example.com', 443, 'POST')).toEqual({ action: 'deny', rule: 'deny-post-to-uploads', explicit: true });
    expect(decide(policy, 'uploads.example.com', 443, 'GET')).toEqual({ action: 'allow', rule: 'allow-all', explicit: false });
    // A suffix names no one host: it allows, but does not open private space to every name under it.
    expect(decide(policy, 'git.corp.internal', 443, 'GET')).toEqual({ action: 'allow', rule: 'allow-internal', explicit: false });
    expect(decide(policy, 'git.corp.internal', 8443, 'GET').rule).toBe('allow-all');
    expect(decide(policy, 'a.b.evil.example', 443, 'GET').action).toBe('deny');
    expect(decide(policy, 'EVIL.example.', 443, 'GET').action).toBe('deny');
    expect(decide(parsePolicy('{"version":1,"rules":[]}', 'empty'), 'x', 443, 'GET')).toEqual({
      action: 'deny',
      rule: 'default.no-rule',
      explicit: false,
    });
  });

  it('lets a name be looked up when some port and method reach it, and denies it only when none does', () => {
    const only = (rules: unknown[]) => parsePolicy(JSON.stringify({ version: 1, rules }), 'test');
    expect(decideName(policy, 'evil.example')).toEqual({ action: 'deny', rule: 'deny-evil', explicit: true });
    expect(decideName(policy, 'uploads.example.com').action).toBe('allow');
    const ssh = only([{ id: 'ssh', action: 'allow', domains: ['git.example'], ports: [22] }]);
    expect(decideName(ssh, 'git.example')).toEqual({ action: 'allow', rule: 'ssh', explicit: true });
    expect(decideName(ssh, 'other.example')).toEqual({ action: 'deny', rule: 'default.no-rule', explicit: false });
    const postOnly = only([{ id: 'post', action: 'allow', domains: ['api.example'], methods: ['post'] }]);
    expect(decideName(postOnly, 'api.example').rule).toBe('post');
    // Denied on every port a rule names, allowed on the rest: still reachable, so it resolves.
    const mostPorts = only([
      { id: 'deny-web', action: 'deny', domains: ['x.example'], ports: [1, 2, 3, 80, 443] },
      { id: 'rest', action: 'allow', domains: ['*'] },
    ]);
    expect(decideName(mostPorts, 'x.example').rule).toBe('rest');
  });

  it('refuses a broken policy with the reason, and a reload keeps the previous one', () => {
    expect(() => parsePolicy('{"version":1,"rules":[{"id":"x","action":"maybe","domains":["a"]}]}', 'p.json')).toThrow(
      /policy p.json is invalid: rules.0.action/,
    );
    expect(() => parsePolicy('{nope', 'p.json')).toThrow(/not valid JSON/);
    const path = `${home.root}/policy-reload.json`;
    writeFileSync(path, JSON.stringify({ version: 1, rules: [{ id: 'one', action: 'allow', domains: ['*'] }] }));
    const store = new PolicyStore(null, path);
    writeFileSync(path, JSON.stringify({ version: 1, rules: [{ id: 'two', action: 'deny', domains: ['*'] }] }));
    expect(store.reload()).toBe(true);
    expect(store.decide('a.com', 443, 'GET').rule).toBe('two');
    writeFileSync(path, '{broken');
    expect(store.reload()).toBe(false);
    expect(store.lastError).toMatch(/not valid JSON/);
    expect(store.decide('a.com', 443, 'GET').rule).toBe('two');
  });

  it('knows loopback, private, link-local and mapped addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ])
      expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '172.32.0.1']) expect(isPrivateAddress(a), a).toBe(false);
  });
});

describe('small parsers', () => {
  it('parses CAPSEM_RESOLVE and says what is wrong with a bad entry', () => {
    const map = parseResolveMap('api.anthropic.com:443=127.0.0.1:8443, [::1]:80=[::1]:9000');
    expect(map.get('api.anthropic.com:443')).toEqual({ address: '127.0.0.1', port: 8443 });
    expect(map.get('::1:80')).toEqual({ address: '::1', port: 9000 });
    expect(() => parseResolveMap('api:443=notanip:1')).toThrow(/not an IP address/);
    expect(() => parseResolveMap('api=1.2.3.4:1')).toThrow(/not host:port/);
  });

  it('parses CONNECT authorities strictly', () => {
    expect(parseAuthority('example.com:8443', 443)).toEqual({ host: 'example.com', port: 8443 });
    expect(parseAuthority('[::1]:443', 443)).toEqual({ host: '::1', port: 443 });
    for (const bad of ['', 'a b:1', 'host:99999', 'http://x:1', 'x:1/path']) expect(parseAuthority(bad, 443), bad).toBeNull();
  });

  it('keeps allowlisted headers verbatim and never a credential', () => {
    const out = recordedHeaders({
      'content-type': 'application/json',
      authorization: 'Bearer sk-secret',
      'x-api-key': 'sk-ant-1',
      cookie: 'a=b',
    })!;
    expect(out['content-type']).toBe('application/json');
    for (const k of ['authorization', 'x-api-key', 'cookie']) expect(out[k]).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(JSON.stringify(out)).not.toMatch(/sk-secret|sk-ant-1/);
  });
});

describe('policy file watching', () => {
  it('picks up an edit to the policy file without a restart', async () => {
    const path = `${home.root}/policy-watch.json`;
    writeFileSync(path, JSON.stringify({ version: 1, rules: [{ id: 'allow', action: 'allow', domains: ['*'] }] }));
    const store = new PolicyStore(null, path);
    const stop = store.watch(50);
    try {
      // Let the watcher take its first look, as it has long before anyone edits a policy.
      await new Promise((r) => setTimeout(r, 200));
      writeFileSync(
        path,
        JSON.stringify({
          version: 1,
          rules: [
            { id: 'deny-news', action: 'deny', domains: ['news.example'] },
            { id: 'allow', action: 'allow', domains: ['*'] },
          ],
        }),
      );
      const deadline = Date.now() + 5000;
      while (store.decide('news.example', 443, 'GET').action !== 'deny' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      expect(store.decide('news.example', 443, 'GET')).toMatchObject({ action: 'deny', rule: 'deny-news' });
    } finally {
      stop();
    }
  });

  it('takes up CAPSEM_HOME/policy.json when it is created while running, the file a refusal tells the user to write', async () => {
    const fresh = tempHome();
    const store = new PolicyStore(fresh);
    const stop = store.watch(50);
    try {
      expect(store.path).toBe(DEFAULT_POLICY_PATH);
      expect(store.howToAllowPrivate('localhost', 11434)).toContain(`${fresh.root}/policy.json (copy ${DEFAULT_POLICY_PATH} there first)`);
      await new Promise((r) => setTimeout(r, 200));
      const policy = JSON.parse(readFileSync(DEFAULT_POLICY_PATH, 'utf8')) as { rules: unknown[] };
      policy.rules.unshift({ id: 'allow-ollama', action: 'allow', domains: ['localhost'], ports: [11434] });
      writeFileSync(`${fresh.root}/policy.json`, JSON.stringify(policy));
      const deadline = Date.now() + 5000;
      while (store.decide('localhost', 11434, 'POST').rule !== 'allow-ollama' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      expect(store.decide('localhost', 11434, 'POST')).toEqual({ action: 'allow', rule: 'allow-ollama', explicit: true });
      expect(store.path).toBe(`${fresh.root}/policy.json`);
      expect(store.howToAllowPrivate('localhost', 11434)).toContain(`in ${fresh.root}/policy.json, before`);
    } finally {
      stop();
      fresh.remove();
    }
  });
});
