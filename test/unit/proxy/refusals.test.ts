import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { EgressRefused } from '../../../electron/proxy/egress.ts';
import { credentialRefusal, rawAnswer, refusedOutcome } from '../../../electron/proxy/refusals.ts';

// What a client reads when the proxy will not forward its request, and what the session records.

function written(write: (socket: PassThrough) => void): Promise<string> {
  const socket = new PassThrough();
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<string>((resolve) => socket.on('end', () => resolve(Buffer.concat(chunks).toString())));
  write(socket);
  return ended;
}

describe('refusals', () => {
  it('writes a raw answer as a whole HTTP/1.1 response that closes the connection, its length in bytes', async () => {
    const text = await written((s) =>
      rawAnswer(s, 407, 'Proxy Authentication Required', 'naïve\n', { 'proxy-authenticate': 'Basic realm="capsem"' }),
    );
    expect(text).toBe(
      'HTTP/1.1 407 Proxy Authentication Required\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 7\r\nproxy-authenticate: Basic realm="capsem"\r\nconnection: close\r\n\r\nnaïve\n',
    );
  });

  it('records a stand-in sent elsewhere as denied under the broker rule', () => {
    expect(credentialRefusal('a stand-in for anthropic went to example.com')).toMatchObject({
      decision: 'denied',
      status: 403,
      matchedRule: 'credentials.stand-in-elsewhere',
      error: { kind: 'credential_refused', message: 'a stand-in for anthropic went to example.com' },
    });
  });

  it('records an egress refusal as denied under the rule that refused it', () => {
    const err = new EgressRefused('destination_private', 'default.private', '10.0.0.1 is private');
    expect(refusedOutcome(err)).toEqual({
      decision: 'denied',
      status: 403,
      matchedRule: 'default.private',
      error: { kind: 'destination_private', message: '10.0.0.1 is private' },
    });
  });
});
