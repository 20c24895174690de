import { lenientJson } from '../telemetry/json.ts';
import { parseMcpExchange } from '../telemetry/mcp.ts';

// MCP tools/call requests as the network rows show them, for a file that has no security ledger to
// correlate tool_calls with (one built from the spec's DDL alone): each request body is read as
// JSON-RPC, batches included, and counted under the tool it names.

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
