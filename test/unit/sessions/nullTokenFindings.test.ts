import { describe, expect, it } from 'vitest';
import { nullTokenFindings, type NullTokenCall } from '../../../electron/sessions/nullTokenFindings.ts';

const call = (id: number, fields: Partial<NullTokenCall>): NullTokenCall => ({
  id,
  model: 'gpt-4o',
  stream: true,
  usageDetails: '{}',
  linked: true,
  errorKind: null,
  errorMessage: null,
  ...fields,
});

describe('nullTokenFindings', () => {
  it('gives one finding per cause, and leaves a call cut short with its cause recorded to the notes', () => {
    const calls = [
      ...Array.from({ length: 7 }, (_, i) => call(i + 1, { usageDetails: '{"incomplete":true}', errorKind: null })),
      call(8, { usageDetails: '{"incomplete":true}', errorKind: 'client_canceled' }),
      call(9, { usageDetails: '{"incomplete":true}', stream: false, errorKind: null }),
      call(10, { usageDetails: '{"incomplete":true}', stream: false, errorKind: 'upstream_error' }),
    ];
    const { findings, notes } = nullTokenFindings(calls);
    expect(notes).toEqual([]);
    expect(findings).toEqual([
      {
        message: 'streamed model_calls with NULL tokens: the stream ended before its final event',
        count: 7,
        samples: ['1 gpt-4o', '2 gpt-4o', '3 gpt-4o', '4 gpt-4o', '5 gpt-4o'],
        cause:
          "The stream ended before its final event with no error on its exchange: the upstream ended it early, or it passed the recorder's body cap (event_body_blobs.truncated) and the rest was not kept; the provider's usage comes in that last event.",
      },
      {
        message: 'non-streamed model_calls with NULL tokens: the response was cut short',
        count: 1,
        samples: ['9 gpt-4o'],
        cause:
          "The response JSON was cut short with no error on its exchange: the upstream ended it early, or it passed the recorder's body cap (event_body_blobs.truncated) and the rest was not kept; the usage is at its end.",
      },
    ]);
  });

  it('blames no decoding it has no evidence of when the file cannot link a call to its exchange', () => {
    const { findings } = nullTokenFindings([call(1, { linked: false })]);
    expect(findings[0]!.cause).toMatch(
      /^No usage could be read from the stream, and this file does not link model calls to their exchanges/,
    );
    expect(findings[0]!.cause).not.toMatch(/Gzip bug/);
  });

  it('reads usage_details written by anyone without trusting it', () => {
    const hostile = [
      'not json',
      '[1]',
      'null',
      '{"incomplete":"yes"}',
      '{"usage":["unreported"]}',
      42,
      null,
      '{"__proto__":{"incomplete":true}}',
    ];
    const { findings, notes } = nullTokenFindings(hostile.map((usageDetails, i) => call(i + 1, { usageDetails })));
    expect(notes).toEqual([]);
    expect(findings.map((f) => [f.message, f.count])).toEqual([['streamed model_calls with NULL tokens', hostile.length]]);
  });
});
