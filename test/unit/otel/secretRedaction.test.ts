import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, redactTrace, secretRedactor } from '../../../electron/otel/secretRedaction.ts';
import type { SessionTrace } from '../../../electron/otel/spanRecord.ts';

// Every string of every exported span goes through the redactor: a key the host holds never
// survives it, wherever it sits in the text, and key-shaped tokens (stand-ins) go too, while the
// hex digests and ids a span names stay readable.

const KEY = 'sk-ant-api03-Zq8vXkP2mN7rT4wYb6cD1eF3gH5jK9lL0oQ2sU4vW6xY8zA-BCdEfGhIjKlMnOpQrStUvWxYz0123456789AA';

describe('secretRedactor', () => {
  it('leaves no held key in any text, whatever surrounds it, as it is or URL-encoded', () => {
    const redact = secretRedactor([KEY]);
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.boolean(), (before, after, encoded) => {
        const out = redact(`${before}${encoded ? encodeURIComponent(KEY) : KEY}${after}`);
        expect(out).not.toContain(KEY);
        expect(out).not.toContain(encodeURIComponent(KEY));
      }),
    );
  });

  it('redacts a stand-in it was never told of by its shape, and keeps digests, ids and prose', () => {
    const redact = secretRedactor([]);
    const standIn = 'AIzaSyB3x9Qk2Lm8Np4Rt6Vw1Yz5Ab7Cd0Ef2Gh';
    expect(redact(`curl "https://example.test/?key=${standIn}"`)).toBe(`curl "https://example.test/?key=${REDACTED}"`);
    const digest = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    expect(redact(`content ${digest} of toolu_01ABCdef and /workspace/src/parse.ts`)).toBe(
      `content ${digest} of toolu_01ABCdef and /workspace/src/parse.ts`,
    );
  });

  it('redacts every attribute, event attribute, name and status of a trace', () => {
    const trace: SessionTrace = {
      traceId: '0'.repeat(32),
      open: 0,
      spans: [
        {
          spanId: '1'.repeat(16),
          parentId: null,
          name: `exec echo ${KEY}`,
          kind: 'internal',
          start: 0,
          end: 1,
          attributes: { 'process.command_args': ['echo', KEY], 'process.exit.code': 0 },
          events: [{ name: 'capsem.file.change', at: 0, attributes: { 'file.path': `notes/${KEY}.txt` } }],
          error: `exited: ${KEY}`,
        },
      ],
    };
    const text = JSON.stringify(redactTrace(trace, secretRedactor([KEY])));
    expect(text).not.toContain(KEY);
    expect(text.split(REDACTED)).toHaveLength(5);
  });
});
