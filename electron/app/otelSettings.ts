import type { CallResult } from '../contract/appContract.ts';
import { ExportLedger } from '../otel/exportLedger.ts';
import { parseHeaderLines } from '../otel/headerLines.ts';
import { otelTarget } from '../otel/otelTarget.ts';
import { tracesUrl } from '../otel/otlpSender.ts';
import { readAppSettings, writeAppSettings } from '../store/appSettings.ts';
import type { CapsemHome } from '../store/paths.ts';
import { CallFailure } from './callFailure.ts';

// Settings → Export (OpenTelemetry) on the core's side: the endpoint in use and what the ledger
// holds for it, and changes to the saved endpoint, headers and content switch. Header values are
// secrets, like provider keys: they are written to settings.json and never sent back to the window.

type OtelSettings = CallResult<'otel.get'>;

export interface OtelChange {
  /** Empty turns the export off. */
  readonly endpoint?: string | undefined;
  /** `key=value` lines, each adding a header or replacing the saved one of that name. */
  readonly headers?: string | undefined;
  readonly removeHeaders?: readonly string[] | undefined;
  readonly content?: boolean | undefined;
}

/** Drops listed in the window: the newest, the way `capsem otel status` lists them. */
const SHOWN_DROPS = 5;

function envOverride(env: NodeJS.ProcessEnv): string | null {
  return env.CAPSEM_OTLP_ENDPOINT?.trim()
    ? "set for this run by CAPSEM_OTLP_ENDPOINT in the app's environment (headers from CAPSEM_OTLP_HEADERS, contents with CAPSEM_OTLP_CONTENT=1); what is saved here applies once it is unset"
    : null;
}

function ledgerStatus(home: CapsemHome, url: string): NonNullable<OtelSettings['status']> {
  const ledger = ExportLedger.open(home);
  try {
    const s = ledger.status(url);
    return {
      sentSpans: s.sentSpans,
      sentRequests: s.sentRequests,
      queuedSpans: s.queuedSpans,
      queuedRequests: s.queuedBatches,
      droppedSpans: s.droppedSpans,
      lastDrops: s.drops.slice(-SHOWN_DROPS).map((d) => ({ ...d })),
    };
  } finally {
    ledger.close();
  }
}

export function otelSettings(home: CapsemHome, env: NodeJS.ProcessEnv): OtelSettings {
  const fromEnv = envOverride(env);
  const saved = readAppSettings(home).otel;
  const base = fromEnv
    ? { endpoint: env.CAPSEM_OTLP_ENDPOINT!.trim(), headerNames: [], content: env.CAPSEM_OTLP_CONTENT === '1', fromEnv }
    : { endpoint: saved.endpoint, headerNames: Object.keys(saved.headers).sort(), content: saved.content, fromEnv };
  let target: ReturnType<typeof otelTarget>;
  try {
    target = otelTarget(home, env);
  } catch (err) {
    // A hand-edited settings.json or a bad CAPSEM_OTLP_ENDPOINT: said beside the fields, which still show it.
    return { ...base, url: null, status: null, problem: `nothing is exported: ${(err as Error).message}` };
  }
  if (target === null) return { ...base, url: null, status: null, problem: null };
  const shown = { ...base, headerNames: Object.keys(target.headers).sort(), url: target.url.href };
  try {
    return { ...shown, status: ledgerStatus(home, target.url.href), problem: null };
  } catch (err) {
    return { ...shown, status: null, problem: `the export queue could not be read: ${(err as Error).message}` };
  }
}

export function changeOtelSettings(home: CapsemHome, env: NodeJS.ProcessEnv, change: OtelChange): OtelSettings {
  const fromEnv = envOverride(env);
  if (fromEnv) throw new CallFailure('not_available', `the export is ${fromEnv}`);
  const saved = readAppSettings(home).otel;
  let endpoint = saved.endpoint;
  if (change.endpoint !== undefined) {
    endpoint = change.endpoint.trim() || null;
    if (endpoint !== null) {
      try {
        tracesUrl(endpoint);
      } catch (err) {
        throw new CallFailure('bad_params', (err as Error).message);
      }
    }
  }
  let added: Record<string, string>;
  try {
    added = parseHeaderLines(change.headers ?? '');
  } catch (err) {
    throw new CallFailure('bad_params', (err as Error).message);
  }
  const removed = new Set((change.removeHeaders ?? []).map((name) => name.toLowerCase()));
  const kept = Object.entries(saved.headers).filter(([name]) => !removed.has(name));
  const headers = { ...Object.fromEntries(kept), ...added };
  writeAppSettings(home, { otel: { endpoint, headers, content: change.content ?? saved.content } });
  return otelSettings(home, env);
}
