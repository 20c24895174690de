import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

// The hostile HTTP/2 clients of test/fixtures/http2Flood.mjs, run one after another on the host
// (capsem record) or in a VM, and what each must get: refused, recorded, the proxy still serving.

export const HTTP2_FLOOD = fileURLToPath(new URL('../fixtures/http2Flood.mjs', import.meta.url));

/** Requests the stream flood opens at once on one connection. */
export const FLOOD_STREAMS = 5000;
/** The header list, decoded, the header floods send: 8 MiB. */
export const FLOOD_HEADER_BYTES = 8 << 20;

const FLOODS = [
  ['streams', `COUNT=${FLOOD_STREAMS}`],
  ['headers', `HEADER_BYTES=${FLOOD_HEADER_BYTES}`],
  ['indexed', `HEADER_BYTES=${FLOOD_HEADER_BYTES}`],
] as const;

/** A shell line running every flood in turn against `target` (host:port) with `node` and the fixture at `fixture`. */
export function floodScript(node: string, fixture: string, target: string): string {
  return FLOODS.map(([mode, size]) => `FLOOD=${mode} ${size} TARGET=${target} ${node} ${fixture}`).join(' && ');
}

export interface FloodAnswer {
  readonly alpn: string;
  readonly answered: number;
  readonly refused: Record<string, number>;
  readonly goaway: { readonly lastStreamId: number; readonly code: number } | null;
  readonly closed: boolean;
  readonly after: number | string;
}

/** Each flood's JSON line from the script's output, in order. */
export function floodAnswers(stdout: string): FloodAnswer[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as FloodAnswer);
}

/** HTTP/2's ENHANCE_YOUR_CALM: a stream reset for asking too much. */
const ENHANCE_YOUR_CALM = '11';

/**
 * Every flood was refused within the connection's limits and the next connection served; the
 * proxy recorded each refusal (`refusals`: its proxy.http2-limits rows' error_message, in order);
 * the upstream saw no more than the limit of the flood's requests and none of the header floods'.
 */
export function expectFloodsRefused(answers: readonly FloodAnswer[], refusals: readonly string[], upstreamPaths: readonly string[]): void {
  expect(answers).toHaveLength(3);
  const [streams, headers, indexed] = answers as [FloodAnswer, FloodAnswer, FloodAnswer];
  for (const answer of answers) expect(answer).toMatchObject({ alpn: 'h2', after: 200 });
  // The connection that opened 5,000 streams at once is closed with at most the limit served.
  expect(streams.answered).toBeLessThanOrEqual(100);
  expect(streams.closed).toBe(true);
  // 8 MiB of header list in CONTINUATION frames: the connection is closed long before.
  expect(headers).toMatchObject({ answered: 0, closed: true });
  // The same list from HPACK's dynamic table, twice: each stream is reset, the connection lives on and serves the request between.
  expect(indexed).toMatchObject({ answered: 1, refused: { [ENHANCE_YOUR_CALM]: 2 }, closed: false });
  expect(refusals).toEqual([
    expect.stringMatching(/^the HTTP\/2 connection was refused and closed \(.+\); a client may have 100 requests open at once/),
    expect.stringMatching(/^the HTTP\/2 connection was refused and closed \(Too many CONTINUATION frames/),
    // One found when the next request skipped past it, one when the client ended the connection.
    ...[1, 2].map(() =>
      expect.stringMatching(
        /^1 HTTP\/2 request was refused before it was whole; a client may have .* header lists of 65535 bytes and 128 fields$/,
      ),
    ),
  ]);
  expect(upstreamPaths.filter((p) => /^\/flood\/\d+$/.test(p)).length).toBeLessThanOrEqual(100);
  expect(upstreamPaths.filter((p) => ['/flood/headers', '/flood/indexed', '/flood/indexed-again', '/flood/between'].includes(p))).toEqual([
    '/flood/between',
  ]);
}
