import { readAppSettings } from '../store/appSettings.ts';
import type { CapsemHome } from '../store/paths.ts';
import { tracesUrl } from './otlpSender.ts';

// Where sessions are exported, and how: CAPSEM_OTLP_ENDPOINT (with CAPSEM_OTLP_HEADERS, as
// OTEL_EXPORTER_OTLP_HEADERS spells them: key=value pairs, comma-separated, values URL-encoded,
// and CAPSEM_OTLP_CONTENT=1), else the endpoint saved in Settings. No endpoint, no export.

export interface OtelTarget {
  /** The traces URL requests go to; it names the endpoint's queue in the ledger too. */
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly content: boolean;
  /** Where the endpoint came from, said beside it. */
  readonly from: 'CAPSEM_OTLP_ENDPOINT' | 'Settings' | 'the command line';
}

/** OTEL_EXPORTER_OTLP_HEADERS' format; a pair without `=` is a mistake worth saying. */
export function parseOtlpHeaders(text: string | undefined, variable = 'CAPSEM_OTLP_HEADERS'): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',').map((p) => p.trim())) {
    if (pair.length === 0) continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`${variable}: "${pair}" is not key=value`);
    headers[decodeURIComponent(pair.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  return headers;
}

export function otelTarget(home: CapsemHome, env: NodeJS.ProcessEnv = process.env): OtelTarget | null {
  const fromEnv = env.CAPSEM_OTLP_ENDPOINT?.trim();
  if (fromEnv)
    return {
      url: tracesUrl(fromEnv),
      headers: parseOtlpHeaders(env.CAPSEM_OTLP_HEADERS),
      content: env.CAPSEM_OTLP_CONTENT === '1',
      from: 'CAPSEM_OTLP_ENDPOINT',
    };
  const { otel } = readAppSettings(home);
  if (!otel.endpoint) return null;
  return { url: tracesUrl(otel.endpoint), headers: otel.headers, content: otel.content, from: 'Settings' };
}
