import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientOfUserAgent, MAX_CLIENT_BYTES } from '../../../electron/sessions/eventClient.ts';

// The event's client as Cortex's pipeline.ParseUserAgent makes it: name and version for an agent
// we know, raw for every User-Agent sent, nothing for none.

describe('the client a User-Agent names', () => {
  it.each([
    ['claude-cli/2.0.14 (external, cli)', { name: 'claude-code', version: '2.0.14' }],
    ['claude-code/1.0.3', { name: 'claude-code', version: '1.0.3' }],
    ['codex_cli_rs/0.20.0 (Debian 12.0.0; x86_64) xterm-256color', { name: 'codex', version: '0.20.0' }],
    ['GeminiCLI/0.1.5 (linux; x64)', { name: 'gemini-cli', version: '0.1.5' }],
    ['claude-cli (no version)', { name: 'claude-code' }],
    ['claude-cli/', { name: 'claude-code' }],
    ['opencode/1.0.150', { name: 'opencode', version: '1.0.150' }],
    ['bob/1.2.0 (linux; x64)', { name: 'bob', version: '1.2.0' }],
    ['pi-coding-agent/0.52.10', { name: 'pi', version: '0.52.10' }],
  ])('knows %s', (userAgent, known) => {
    expect(clientOfUserAgent(userAgent)).toEqual({ ...known, raw: userAgent });
  });

  it('keeps an agent it does not know under what it sent, and nothing for a User-Agent not sent', () => {
    expect(clientOfUserAgent('curl/8.5.0')).toEqual({ raw: 'curl/8.5.0' });
    expect(clientOfUserAgent('OpenAI/Python 1.40.0')).toEqual({ raw: 'OpenAI/Python 1.40.0' });
    expect(clientOfUserAgent('not-claude-cli/1.0')).toEqual({ raw: 'not-claude-cli/1.0' });
    expect(clientOfUserAgent(undefined)).toBeUndefined();
    expect(clientOfUserAgent(' \t ')).toBeUndefined();
    expect(clientOfUserAgent('  curl/8  ')).toEqual({ raw: 'curl/8' });
  });

  it('shows what would rewrite or hide the text around it as U+FFFD, in raw and version alike', () => {
    expect(clientOfUserAgent('claude-cli/1\x1b[31m')).toEqual({
      name: 'claude-code',
      version: '1\ufffd[31m',
      raw: 'claude-cli/1\ufffd[31m',
    });
    expect(clientOfUserAgent('x\u009b2J y')).toEqual({ raw: 'x\ufffd2J y' });
    expect(clientOfUserAgent('codex/\u202e1.0')).toEqual({ name: 'codex', version: '\ufffd1.0', raw: 'codex/\ufffd1.0' });
    expect(clientOfUserAgent('a\u200bb\ud800c')).toEqual({ raw: 'a\ufffdb\ufffdc' });
    expect(clientOfUserAgent('a\ud83d\ude00b')).toEqual({ raw: 'a\ud83d\ude00b' });
  });

  it('caps raw at 128 bytes without splitting a character', () => {
    expect(clientOfUserAgent('x'.repeat(200))!.raw).toBe('x'.repeat(MAX_CLIENT_BYTES));
    expect(clientOfUserAgent(`${'a'.repeat(127)}é`)!.raw).toBe('a'.repeat(127));
    expect(clientOfUserAgent(`${'a'.repeat(126)}é`)!.raw).toBe(`${'a'.repeat(126)}é`);
  });

  it('for any header value: absent only when blank, raw bounded and well formed with nothing hiding in it, and the same after JSON', () => {
    const hiding = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2060\ufeff]/;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 300 }),
          fc.string({ maxLength: 300 }),
          fc.tuple(fc.constantFrom('claude-cli', 'codex', 'GeminiCLI', 'curl'), fc.string({ unit: 'binary' })).map(([p, v]) => `${p}/${v}`),
        ),
        (userAgent) => {
          const client = clientOfUserAgent(userAgent);
          if (userAgent.trim() === '') {
            expect(client).toBeUndefined();
            return;
          }
          expect(client).toBeDefined();
          const raw = client!.raw!;
          expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(MAX_CLIENT_BYTES);
          // Well formed: UTF-8 carries it unchanged (a lone surrogate would come back as U+FFFD).
          expect(Buffer.from(raw).toString()).toBe(raw);
          expect(raw).not.toMatch(hiding);
          if (client!.version !== undefined) expect(raw.split(/[ \t]/)[0]).toContain(`/${client!.version}`);
          expect(JSON.parse(JSON.stringify(client))).toEqual(client);
        },
      ),
    );
  });
});
