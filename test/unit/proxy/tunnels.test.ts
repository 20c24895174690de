import { PassThrough } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { sniName, transparentTarget, withPrefix } from '../../../electron/proxy/tunnels.ts';

// The way into a tunnel, in the pieces that need no socket: where a transparent connection goes,
// the name a TLS client asked for, and the bytes read before TLS put back in front.

describe('transparent targets', () => {
  const names = new Map([['10.128.0.5', 'api.example.com']]);
  const nameAt = (address: string): string | undefined => names.get(address);

  it('names a stand-in address by the name it stands in for, any other address by itself', () => {
    expect(transparentTarget({ address: '10.128.0.5', port: 443 }, nameAt)).toEqual({
      host: 'api.example.com',
      port: 443,
      transparent: true,
    });
    expect(transparentTarget({ address: '::ffff:1.2.3.4', port: 80 }, nameAt)).toEqual({ host: '1.2.3.4', port: 80, transparent: true });
  });

  it('refuses a destination that is not an address and a port', () => {
    for (const d of [
      { address: 'api.example.com', port: 443 },
      { address: '1.2.3.4', port: 0 },
      { address: '1.2.3.4', port: 65536 },
      { address: '1.2.3.4', port: 1.5 },
      { address: '', port: 443 },
    ]) {
      expect(transparentTarget(d, nameAt), JSON.stringify(d)).toBeNull();
    }
  });
});

describe('SNI names', () => {
  const withServername = (servername: string | false | undefined): TLSSocket =>
    Object.assign(Object.create(TLSSocket.prototype) as TLSSocket, { servername });

  it('takes a name the client asked for in canonical spelling, and no name for none or an address', () => {
    expect(sniName(withServername('API.Example.COM.'))).toBe('api.example.com');
    expect(sniName(withServername('1.2.3.4'))).toBeNull();
    expect(sniName(withServername(false))).toBeNull();
    expect(sniName(withServername(undefined))).toBeNull();
  });
});

describe('withPrefix', () => {
  it("reads the bytes already taken first, then the rest of the socket's, then its end", async () => {
    const socket = new PassThrough();
    const stream = withPrefix(socket, Buffer.from('\x16first '));
    const read: Buffer[] = [];
    stream.on('data', (c: Buffer) => read.push(c));
    const ended = new Promise((r) => stream.on('end', r));
    socket.write('rest');
    socket.end();
    await ended;
    expect(Buffer.concat(read).toString()).toBe('\x16first rest');
  });

  it('destroys the socket with the stream', () => {
    const socket = new PassThrough();
    withPrefix(socket, Buffer.alloc(0)).destroy();
    expect(socket.destroyed).toBe(true);
  });
});
