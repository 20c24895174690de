import type Database from 'better-sqlite3';
import { lenientJson } from '../telemetry/json.ts';
import { parseMcpExchange } from '../telemetry/mcp.ts';
import { BUILT_IN_PROVIDERS, requestView } from '../telemetry/providers/index.ts';
import type { RequestView } from '../telemetry/requestView.ts';
import { matchWire, wireNamed } from '../telemetry/wire/index.ts';
import { columnsOf } from '../store/tableColumns.ts';

// The one place a reader detects at read time what a session.db did not record. This app's
// recorder writes, for every model call, the wire format it read the call in (model_calls.wire)
// and the exchange that carried it (net_event_id); the read model takes both as they are, so a
// change to detection never reclassifies a session it recorded. A session.db another tool wrote
// (a google/capsem session.db, imported and adopted by electron/archive/, or checked as it is by
// `capsem check`) records neither, nor do this app's sessions from before those columns: for such a
// database alone, a call's request is read by the endpoint that claims its path, and an exchange is
// taken for a model call or an MCP call by its path, as the recorder would have taken it; and a file
// built from the spec's DDL alone, which has no security ledger to correlate MCP tool_calls with,
// has its MCP calls counted from its network rows' request bodies.

/** Whether the file's model calls lack what this app's recorder writes on each (their wire, their exchange). */
export function writtenByAnotherTool(db: Database.Database, tables: ReadonlySet<string>): boolean {
  if (!tables.has('model_calls')) return true;
  const columns = columnsOf(db, 'model_calls');
  if (!columns.has('wire') || !columns.has('net_event_id')) return true;
  // The first call tells, without a scan: a file another tool wrote has no call of ours, and one of
  // our sessions from before those columns (resumed since, perhaps) starts with a call without them.
  const first = db.prepare('SELECT wire IS NULL OR net_event_id IS NULL AS theirs FROM model_calls ORDER BY id LIMIT 1').get() as
    { theirs: number } | undefined;
  return first?.theirs === 1;
}

/** The first built-in provider with an endpoint at this path (without its query), whatever the host: the files this reads name none. */
function builtInAtPath(bare: string): string | null {
  for (const provider of BUILT_IN_PROVIDERS)
    for (const endpoint of provider.endpoints)
      if (bare.startsWith(endpoint.basePath) && matchWire(wireNamed(endpoint.wire), bare.slice(endpoint.basePath.length)))
        return provider.id;
  return null;
}

/** The provider whose model API a path is, by the path alone; null for any other path. */
export function providerOfPath(path: unknown): string | null {
  return typeof path === 'string' ? builtInAtPath(path.split('?')[0]!) : null;
}

/** An exchange of a file another tool wrote, by its path: a model call, an MCP call (a path segment `mcp`), or neither. */
export function exchangeKindOfPath(path: string): 'llm' | 'mcp' | null {
  const bare = path.split('?')[0]!;
  return builtInAtPath(bare) ? 'llm' : /(^|\/)mcp(\/|$)/.test(bare) ? 'mcp' : null;
}

/** The request of a call recorded without its wire, read by the provider's endpoint that claims its path. */
export function requestViewByPath(provider: string, path: string, body: unknown): RequestView {
  return requestView(provider, path, body);
}

/**
 * MCP tools/call requests as the network rows of a file with no security ledger show them: each
 * request body is read as JSON-RPC, batches included, and counted under the tool it names.
 */
export interface McpWireCalls {
  /** tools/call requests by the tool they name; `(unnamed)` when the request names none, as the recorder writes it. */
  readonly byTool: Map<string, number>;
  /** Bodies that mention tools/call but are not JSON (a preview cut short): they could not be counted. */
  readonly unreadable: number;
}

export function mcpWireCalls(bodies: Iterable<unknown>): McpWireCalls {
  const byTool = new Map<string, number>();
  let unreadable = 0;
  for (const body of bodies) {
    const json = lenientJson(body);
    if (json === undefined) {
      unreadable += 1;
      continue;
    }
    for (const message of parseMcpExchange(json, undefined, new Uint8Array())) {
      if (message.method !== 'tools/call') continue;
      const tool = message.toolName ?? '(unnamed)';
      byTool.set(tool, (byTool.get(tool) ?? 0) + 1);
    }
  }
  return { byTool, unreadable };
}
