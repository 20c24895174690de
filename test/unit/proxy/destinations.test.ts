import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalHost, isPrivateAddress } from '../../../electron/policy/addresses.ts';
import { decide, decideAddress, parsePolicy } from '../../../electron/policy/policy.ts';
import { absoluteTarget, splitTarget, tunnelledTarget } from '../../../electron/proxy/requestTarget.ts';

// Every spelling of a destination is one destination: the policy, the private-address check and
// the Host check all compare canonical forms, so no spelling slips past a rule written in another.

const dotted = (n: number): string => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');

describe('canonical hosts', () => {
  it('reads every spelling of loopback and of the metadata address as that address, and as private', () => {
    const loopback = [
      '127.0.0.1',
      '2130706433',
      '0x7f000001',
      '0x7f.1',
      '0177.0.0.1',
      '127.1',
      '127.0.0.1.',
      '::ffff:127.0.0.1',
      '[::ffff:7f00:1]',
      '127%2E0.0.1',
    ];
    for (const spelling of loopback) {
      expect(canonicalHost(spelling), spelling).toEqual({ kind: 'address', host: '127.0.0.1', family: 4 });
      expect(isPrivateAddress(spelling), spelling).toBe(true);
    }
    for (const spelling of ['169.254.169.254', '2852039166', '0xa9fea9fe', '[::ffff:169.254.169.254]', '::ffff:a9fe:a9fe']) {
      expect(canonicalHost(spelling)?.host, spelling).toBe('169.254.169.254');
      expect(isPrivateAddress(spelling), spelling).toBe(true);
    }
    expect(canonicalHost('0')).toEqual({ kind: 'address', host: '0.0.0.0', family: 4 });
    expect(canonicalHost('[::1]')).toEqual({ kind: 'address', host: '::1', family: 6 });
  });

  it('gives one spelling per IPv4 address, whatever form it came in (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (n) => {
        const canonical = dotted(n);
        for (const spelling of [
          String(n),
          `0x${n.toString(16)}`,
          `::ffff:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`,
          `[::ffff:${canonical}]`,
          `${canonical}.`,
        ]) {
          expect(canonicalHost(spelling)?.host, spelling).toBe(canonical);
          expect(isPrivateAddress(spelling), spelling).toBe(isPrivateAddress(canonical));
        }
      }),
    );
  });

  it('sees a private IPv4 address inside the IPv6 forms that translate to it', () => {
    for (const a of [
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::127.0.0.1',
      '2002:a00:1::',
      '::7f00:1',
      '::',
      'fe80::1',
      'fd12::1',
      'ff02::1',
      'fec0::1',
    ])
      expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ['64:ff9b::808:808', '2002:808:808::', '2606:4700::1111', '8.8.8.8', '172.32.0.1', '100.128.0.1'])
      expect(isPrivateAddress(a), a).toBe(false);
    for (const a of ['224.0.0.1', '255.255.255.255', '240.1.2.3', '198.18.0.1', '100.64.0.1', '192.0.2.7'])
      expect(isPrivateAddress(a), a).toBe(true);
  });

  it('folds case and a trailing dot off names, and refuses what is no host', () => {
    expect(canonicalHost('API.Example.COM.')).toEqual({ kind: 'name', host: 'api.example.com' });
    for (const bad of [
      '',
      'a b',
      'a/b',
      'a@b',
      'x:1',
      'example.com..',
      '.example.com',
      'a..b',
      '1.2.3.4.5',
      '256.0.0.1',
      '[fe80::1%25eth0]',
      'a#b',
    ])
      expect(canonicalHost(bad), bad).toBeNull();
  });
});

describe('policy on canonical destinations', () => {
  const policy = parsePolicy(
    JSON.stringify({
      version: 1,
      rules: [
        { id: 'deny-metadata', action: 'deny', domains: ['[::ffff:169.254.169.254]'] },
        { id: 'deny-public-ip', action: 'deny', domains: ['0x01020304'] },
        { id: 'allow-lan-printer', action: 'allow', domains: ['192.168.1.50'] },
        { id: 'deny-post', action: 'deny', domains: ['203.0.113.9'], methods: ['POST'] },
        { id: 'allow-corp', action: 'allow', domains: ['*.corp.example', 'git.corp.example'] },
        { id: 'allow-all', action: 'allow', domains: ['*'] },
      ],
    }),
    'test',
  );

  it('keeps rule domains in canonical form, so a rule on an address matches every spelling of it', () => {
    expect(policy.rules[0]!.domains).toEqual(['169.254.169.254']);
    expect(policy.rules[1]!.domains).toEqual(['1.2.3.4']);
    for (const spelling of ['169.254.169.254', '2852039166', '::ffff:a9fe:a9fe', '0xa9.0xfe.0xa9.0xfe'])
      expect(decide(policy, spelling, 80, 'GET').rule, spelling).toBe('deny-metadata');
    for (const spelling of ['1.2.3.4', '16909060', '1.131844', '::ffff:102:304'])
      expect(decide(policy, spelling, 443, 'GET').rule, spelling).toBe('deny-public-ip');
  });

  it('takes a name rule as explicit only when it names the host itself, never through *.suffix or *', () => {
    expect(decide(policy, 'git.corp.example', 443, 'GET')).toEqual({ action: 'allow', rule: 'allow-corp', explicit: true });
    expect(decide(policy, 'wiki.corp.example', 443, 'GET')).toEqual({ action: 'allow', rule: 'allow-corp', explicit: false });
    expect(decide(policy, 'example.org', 443, 'GET')).toEqual({ action: 'allow', rule: 'allow-all', explicit: false });
  });

  it('judges the address a name resolved to by the rules that name addresses', () => {
    expect(decideAddress(policy, '169.254.169.254', 80)).toEqual({ action: 'deny', rule: 'deny-metadata', explicit: true });
    expect(decideAddress(policy, '192.168.1.50', 631)).toEqual({ action: 'allow', rule: 'allow-lan-printer', explicit: true });
    expect(decideAddress(policy, '8.8.8.8', 443)).toBeNull();
    // A connection shared by every method is judged only by rules that name no method.
    expect(decideAddress(policy, '203.0.113.9', 443)).toBeNull();
    expect(decideAddress(policy, '203.0.113.9', 443, 'POST')?.rule).toBe('deny-post');
  });

  it('refuses a rule domain that is no host, naming it', () => {
    expect(() =>
      parsePolicy(JSON.stringify({ version: 1, rules: [{ id: 'x', action: 'deny', domains: ['bad host'] }] }), 'p.json'),
    ).toThrow(/"bad host" is not a host name/);
    // A suffix rule is about names: one that reads as an address would match addresses that end alike.
    for (const suffix of ['*.10.0.0.1', '*.0.1'])
      expect(
        () => parsePolicy(JSON.stringify({ version: 1, rules: [{ id: 'x', action: 'allow', domains: [suffix] }] }), 'p.json'),
        suffix,
      ).toThrow(/not a host name/);
  });
});

describe('request targets and their Host', () => {
  const tunnel = { host: 'api.example.com', port: 443, tls: true };

  it('sends a request where its URL or tunnel says, with that destination as its Host', () => {
    expect(absoluteTarget('http://API.example.com./v1?x=1', 'api.example.com')).toEqual({
      scheme: 'http',
      host: 'api.example.com',
      port: 80,
      path: '/v1?x=1',
      authority: 'api.example.com',
    });
    expect(absoluteTarget('http://2130706433:8080/', undefined)).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      authority: '127.0.0.1:8080',
    });
    expect(tunnelledTarget(tunnel, '/v1/messages', 'api.example.com')).toMatchObject({
      host: 'api.example.com',
      port: 443,
      path: '/v1/messages',
      authority: 'api.example.com',
    });
    expect(tunnelledTarget(tunnel, '/x', 'API.EXAMPLE.COM:443')).toMatchObject({ host: 'api.example.com' });
  });

  it('refuses with 421 a Host that names another destination, or does not parse', () => {
    expect(absoluteTarget('http://files.example/', '127.0.0.1:47601')).toMatchObject({
      status: 421,
      host: 'files.example',
      message: expect.stringMatching(/Host 127\.0\.0\.1:47601 is not this request's destination files\.example/),
    });
    expect(absoluteTarget('http://files.example/', 'files.example:8080')).toMatchObject({ status: 421 });
    expect(tunnelledTarget(tunnel, '/', 'localhost')).toMatchObject({ status: 421, host: 'api.example.com' });
    expect(tunnelledTarget(tunnel, '/', 'api.example.com/evil')).toMatchObject({
      status: 421,
      message: expect.stringMatching(/does not parse/),
    });
    expect(tunnelledTarget(tunnel, '/', 'a b')).toMatchObject({ status: 421 });
    expect(tunnelledTarget(tunnel, 'https://other.example/', 'other.example')).toMatchObject({ status: 421 });
    expect(tunnelledTarget(tunnel, '/', undefined)).toMatchObject({ status: 400 });
  });

  it("holds HTTP/2's :authority to the Host's rule: each one sent must name the tunnel's destination", () => {
    expect(tunnelledTarget(tunnel, '/v1/messages', undefined, 'api.example.com:443')).toMatchObject({
      host: 'api.example.com',
      path: '/v1/messages',
      authority: 'api.example.com',
    });
    expect(tunnelledTarget(tunnel, '/', 'API.example.com', 'api.example.com')).toMatchObject({ host: 'api.example.com' });
    expect(tunnelledTarget(tunnel, '/', undefined, 'localhost')).toMatchObject({
      status: 421,
      host: 'api.example.com',
      message: expect.stringMatching(/^:authority localhost is not this request's destination api\.example\.com$/),
    });
    expect(tunnelledTarget(tunnel, '/', 'api.example.com', 'localhost')).toMatchObject({
      status: 421,
      message: expect.stringMatching(/^:authority localhost/),
    });
    expect(tunnelledTarget(tunnel, '/', 'localhost', 'api.example.com')).toMatchObject({
      status: 421,
      message: expect.stringMatching(/^Host localhost/),
    });
    expect(tunnelledTarget(tunnel, '/', undefined, 'a b')).toMatchObject({
      status: 421,
      message: expect.stringMatching(/^:authority "a b" does not parse/),
    });
  });

  it('answers a malformed target with 400 instead of throwing', () => {
    for (const target of ['http://a:99999/', 'http://[::1/', 'http://user:pw@host/', '/relative', '*', 'http://exa mple/']) {
      expect(absoluteTarget(target, undefined), target).toMatchObject({ status: 400 });
    }
  });
});

describe('request targets', () => {
  it('splits a target at its first question mark into path and query, and gives no query without one', () => {
    expect(splitTarget('/v1/messages?beta=true&x=?')).toEqual({ path: '/v1/messages', query: 'beta=true&x=?' });
    expect(splitTarget('/v1/messages?')).toEqual({ path: '/v1/messages', query: '' });
    expect(splitTarget('/v1/messages')).toEqual({ path: '/v1/messages', query: null });
  });
});
