import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ProxyAgent, request } from 'undici';
import { openSessionCredentials } from '../../electron/credentials/credentialBroker.ts';
import { credentialRefOf } from '../../electron/credentials/credentialRef.ts';
import { KeyScrubber } from '../../electron/credentials/keyScrubber.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { startMitmProxy } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { DEFAULT_CREDENTIALS_SETTINGS } from '../../electron/credentials/providers.ts';
import { startUpstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { figure, median, printFigures, roundRatios } from './report.ts';

// What keeping keys from coming back costs. A response from where a key may have gone is scrubbed
// of every form of it (and decoded first when compressed); everything else is not touched. Measured
// here: the scrubber and the request-body scanner on their own (MiB/s of one core), and a 10 MiB
// download through the proxy from a provider's API (scrubbed) against the same download from
// another host (not scrubbed), identity and gzip, in rounds side by side.

const MIB = 1 << 20;
const BODY_MIB = 10;
const ROUNDS = 7;
const KEY = `sk-ant-api03-${randomBytes(70).toString('base64url').slice(0, 93)}AA`;
/** Scrubbing runs only on a provider's responses; what it must keep up with there is far above a model's stream. */
const SCRUB_FLOOR_MIB_S = 200;
/** A scrubbed download against an unscrubbed one through the same proxy, same bytes. */
const SCRUBBED_DOWNLOAD_FLOOR = 0.6;

/** Text shaped like a provider's stream: no key in it, its characters those of keys, compressing about as JSON does (3-4x). */
function providerText(bytes: number): Buffer {
  const lines: string[] = [];
  for (let size = 0; size < bytes;) {
    const line = `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"${randomBytes(24).toString('base64url')}"}}\n\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

function mibPerSecond(bytes: number, ms: number): number {
  return bytes / MIB / (ms / 1000);
}

function timed(run: () => void): number {
  const t = performance.now();
  run();
  return performance.now() - t;
}

export async function keyScrubBench(): Promise<boolean> {
  const home = tempHome();
  const upstreamHome = tempHome();
  const env = { ANTHROPIC_API_KEY: KEY, OPENAI_API_KEY: `sk-proj-${'o'.repeat(156)}`, GEMINI_API_KEY: `AIza${'g'.repeat(35)}` };
  const session = openSessionCredentials({
    env,
    store: null,
    settings: () => DEFAULT_CREDENTIALS_SETTINGS,
    credentialRefOf: credentialRefOf(Buffer.alloc(32)),
  });
  const forms = session.broker.scrubForms({ scheme: 'https', host: 'api.anthropic.com', port: 443 })!;
  const text = providerText(BODY_MIB * MIB);
  const gzipped = gzipSync(text);
  const chunks = (bytes: Buffer, size: number): Buffer[] =>
    Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
  const pieces = chunks(text, 64 << 10);

  const scrub: number[] = [];
  const scan: number[] = [];
  const gunzip: number[] = [];
  const gunzipScrub: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    scrub.push(
      timed(() => {
        const scrubber = new KeyScrubber(forms);
        for (const piece of pieces) scrubber.push(piece);
        scrubber.end();
      }),
    );
    scan.push(
      timed(() => {
        const scanner = session.broker.bodyScanner({ scheme: 'https', host: 'upload.example', port: 443 })!;
        for (const piece of pieces) scanner.push(piece);
      }),
    );
    gunzip.push(timed(() => gunzipSync(gzipped)));
    gunzipScrub.push(
      timed(() => {
        const scrubber = new KeyScrubber(forms);
        for (const piece of chunks(gunzipSync(gzipped), 64 << 10)) scrubber.push(piece);
      }),
    );
  }

  // Through the proxy: the same upstream answers as the provider's API and as another host.
  const upstream = await startUpstream(upstreamHome, ['api.anthropic.com', 'other.bench.test'], (req, _body, res: ServerResponse) => {
    const coded = req.url === '/gzip';
    res.writeHead(200, { 'content-type': 'application/json', ...(coded ? { 'content-encoding': 'gzip' } : {}) });
    res.end(coded ? gzipped : text);
  });
  const proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy: new PolicyStore(home),
    resolve: parseResolveMap(`api.anthropic.com:443=127.0.0.1:${upstream.port},other.bench.test:443=127.0.0.1:${upstream.port}`),
    upstreamCa: [upstream.caPem],
    onExchange: () => undefined,
    credentials: session.broker,
  });
  const dispatcher = new ProxyAgent({ uri: proxy.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } });
  const download = async (host: string, path: string): Promise<number> => {
    const t = performance.now();
    const res = await request(`https://${host}${path}`, { dispatcher, headers: { 'accept-encoding': 'gzip' } });
    for await (const chunk of res.body) void chunk;
    return performance.now() - t;
  };
  const downloads = { scrubbed: [] as number[], plain: [] as number[], scrubbedGzip: [] as number[], plainGzip: [] as number[] };
  await download('api.anthropic.com', '/');
  await download('other.bench.test', '/');
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0;
    if (order) downloads.scrubbed.push(await download('api.anthropic.com', '/'));
    downloads.plain.push(await download('other.bench.test', '/'));
    if (!order) downloads.scrubbed.push(await download('api.anthropic.com', '/'));
    downloads.scrubbedGzip.push(await download('api.anthropic.com', '/gzip'));
    downloads.plainGzip.push(await download('other.bench.test', '/gzip'));
  }
  await dispatcher.close();
  await proxy.close();
  await upstream.close();
  home.remove();
  upstreamHome.remove();

  const bytes = BODY_MIB * MIB;
  const scrubRate = mibPerSecond(bytes, median(scrub));
  const identityRatio = median(roundRatios(downloads.plain, downloads.scrubbed));
  const gzipRatio = median(roundRatios(downloads.plainGzip, downloads.scrubbedGzip));
  return printFigures(`keys: what scrubbing a provider's responses costs (${BODY_MIB} MiB bodies, ${forms.length} forms of one key)`, [
    figure('scrubber alone', `${scrubRate.toFixed(0)} MiB/s`, scrubRate >= SCRUB_FLOOR_MIB_S, `>= ${SCRUB_FLOOR_MIB_S} MiB/s`),
    figure('request body scan, 3 keys', `${mibPerSecond(bytes, median(scan)).toFixed(0)} MiB/s`, true, 'reported'),
    figure(
      'gunzip alone / gunzip + scrub',
      `${mibPerSecond(bytes, median(gunzip)).toFixed(0)} / ${mibPerSecond(bytes, median(gunzipScrub)).toFixed(0)} MiB/s`,
      true,
      'reported',
    ),
    figure(
      'download via proxy, identity',
      `${median(downloads.scrubbed).toFixed(0)} ms scrubbed, ${median(downloads.plain).toFixed(0)} ms not: ${identityRatio.toFixed(2)}x`,
      identityRatio >= SCRUBBED_DOWNLOAD_FLOOR,
      `>= ${SCRUBBED_DOWNLOAD_FLOOR}x`,
    ),
    figure(
      'download via proxy, gzip (decoded)',
      `${median(downloads.scrubbedGzip).toFixed(0)} ms scrubbed, ${median(downloads.plainGzip).toFixed(0)} ms not: ${gzipRatio.toFixed(2)}x`,
      true,
      `reported (${(gzipped.length / MIB).toFixed(1)} MiB on the wire, ${BODY_MIB} MiB to the client)`,
    ),
  ]);
}
