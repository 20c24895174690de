import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgress, EgressRefused, type EgressPolicy } from '../../../electron/proxy/egress.ts';
import { decide, decideAddress, parsePolicy, privateDestinationAdvice, type PolicyDocument } from '../../../electron/policy/policy.ts';
import { parseResolveMap } from '../../../electron/proxy/resolveMap.ts';

// The one egress function, against a real listener on loopback: a refused destination is never
// connected to, whichever spelling or name led to it.

let server: Server;
let port = 0;
let accepted = 0;

beforeAll(async () => {
  server = createServer((socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => server.close());

function policyOf(document: PolicyDocument): EgressPolicy {
  return {
    decideAddress: (address, p, method) => decideAddress(document, address, p, method),
    privateAddressesDenied: () => document.privateAddresses === 'deny',
    howToAllowPrivate: (host, p) =>
      privateDestinationAdvice(host, p, { inUse: '/home/u/.capsem/policy.json', editable: '/home/u/.capsem/policy.json' }),
  };
}

const denyPrivate = policyOf(parsePolicy('{"version":1,"rules":[{"id":"all","action":"allow","domains":["*"]}]}', 'test'));

async function refusal(promise: Promise<unknown>): Promise<EgressRefused> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EgressRefused);
  return err as EgressRefused;
}

describe('egress', () => {
  it('refuses loopback in every spelling, and a name that resolves there, without connecting', async () => {
    const egress = createEgress({ policy: denyPrivate });
    const before = accepted;
    for (const host of [
      '127.0.0.1',
      '2130706433',
      '0x7f.1',
      '127.1',
      '::ffff:127.0.0.1',
      '[::ffff:7f00:1]',
      '0.0.0.0',
      '::1',
      'localhost',
      'LOCALHOST.',
    ]) {
      const err = await refusal(egress.dial({ host, port, tls: false, explicit: false }));
      expect(err.kind, host).toBe('destination_private');
      expect(err.rule).toBe('default.deny-private-address');
    }
    expect(accepted).toBe(before);
  });

  it('connects to private space a rule names exactly, or CAPSEM_RESOLVE sends it to', async () => {
    const named = await createEgress({ policy: denyPrivate }).dial({ host: '127.0.0.1', port, tls: false, explicit: true });
    expect(named.address).toBe('127.0.0.1');
    named.socket.destroy();
    const mapped = await createEgress({ policy: denyPrivate, resolve: parseResolveMap(`api.example.test:443=127.0.0.1:${port}`) }).dial({
      host: 'API.example.test.',
      port: 443,
      tls: false,
      explicit: false,
    });
    expect([mapped.address, mapped.port]).toEqual(['127.0.0.1', port]);
    mapped.socket.destroy();
  });

  it('applies a rule on an address to the address a name resolved to, even where private space is allowed', async () => {
    const policy = policyOf(
      parsePolicy(
        JSON.stringify({
          version: 1,
          privateAddresses: 'allow',
          rules: [
            { id: 'no-loopback', action: 'deny', domains: ['0x7f000001'] },
            { id: 'all', action: 'allow', domains: ['*'] },
          ],
        }),
        'test',
      ),
    );
    const before = accepted;
    const err = await refusal(createEgress({ policy }).dial({ host: 'localhost', port, tls: false, explicit: true }));
    expect([err.kind, err.rule]).toEqual(['destination_denied', 'no-loopback']);
    expect(err.message).toMatch(/localhost \(127\.0\.0\.1\) is blocked by policy rule no-loopback/);
    expect(accepted).toBe(before);
  });

  it('refuses a host that is no host, and says what it was', async () => {
    const err = await refusal(createEgress({ policy: denyPrivate }).dial({ host: 'a b', port, tls: false, explicit: false }));
    expect(err.message).toMatch(/"a b" is not a host name or address/);
  });

  it('says in a private refusal which rule lets that destination through, and that rule does', async () => {
    for (const host of ['localhost', '2130706433', '::1']) {
      const err = await refusal(createEgress({ policy: denyPrivate }).dial({ host, port, tls: false, explicit: false }));
      expect(err.message).toMatch(
        /is in private address space, blocked by policy rule default\.deny-private-address\. To allow it, add the rule /,
      );
      expect(err.message).toContain('in /home/u/.capsem/policy.json, before the "*" rule');
      expect(err.message).toContain('"privateAddresses": "allow"');
      const rule = JSON.parse(/add the rule (\{.*?\}) to/.exec(err.message)![1]!) as { id: string; domains: string[] };
      const policy = parsePolicy(JSON.stringify({ version: 1, rules: [rule, { id: 'all', action: 'allow', domains: ['*'] }] }), 'advised');
      const decision = decide(policy, host, port, 'POST');
      expect(decision, host).toEqual({ action: 'allow', rule: rule.id, explicit: true });
      await expect(createEgress({ policy: policyOf(policy) }).check({ host, port, explicit: decision.explicit })).resolves.toMatchObject({
        port,
      });
    }
  });
});
