import { describe, expect, it } from 'vitest';
import { ProxyConnections } from '../../../electron/proxy/connections.ts';

// Who a connection belongs to and whether it needs credentials, as the proxy keeps it per connection.

describe('proxy connections', () => {
  it("names a connection's process by its tunnel, else by the VM that handed it over, else the default", () => {
    const connections = new ProxyConnections('tok', { processName: 'capsem record' });
    const adopted = {};
    const inside = {};
    connections.adopt(adopted, { processName: 'curl', pid: 7 }, 'chacha20-first');
    connections.enter(inside, { host: 'api.example.com', port: 443, tls: true, origin: { processName: 'node', pid: 9 } });
    expect(connections.originOf(inside)).toEqual({ processName: 'node', pid: 9 });
    expect(connections.originOf(adopted)).toEqual({ processName: 'curl', pid: 7 });
    expect(connections.originOf({})).toEqual({ processName: 'capsem record' });
    expect(new ProxyConnections('tok').originOf({})).toEqual({});
  });

  it("offers an adopted connection's TLS the ciphers its guest asked for, and AES-GCM first elsewhere", () => {
    const connections = new ProxyConnections('tok');
    const adopted = {};
    connections.adopt(adopted, {}, 'chacha20-first');
    expect(connections.cipherOrderOf(adopted)).toBe('chacha20-first');
    expect(connections.cipherOrderOf({})).toBe('aes-gcm-first');
  });

  it('trusts a VM connection and the inside of a tunnel without credentials, and counts every other refusal', () => {
    const connections = new ProxyConnections('tok');
    const adopted = {};
    const inside = {};
    connections.adopt(adopted, {}, 'aes-gcm-first');
    connections.enter(inside, { host: 'h', port: 80, tls: false, origin: {} });
    expect(connections.authorised(adopted, {})).toBe(true);
    expect(connections.authorised(inside, {})).toBe(true);
    expect(connections.tunnelOf(inside)).toMatchObject({ host: 'h', port: 80 });
    expect(connections.authorised({}, {})).toBe(false);
    expect(connections.authorised({}, { 'proxy-authorization': 'Basic bm9wZQ==' })).toBe(false);
    expect(connections.unauthenticated).toBe(2);
  });
});
