import { parseMcpExchange } from '../../telemetry/mcp.ts';
import { header, PREVIEW } from './exchangeFacts.ts';
import { writesTo, type ExchangeStep } from './step.ts';

// MCP's JSON-RPC over HTTP: a tools/call as a tool_calls row of origin mcp, and every message as a
// security_rule_events row, in the trace of the model call before it. An exchange a model API step
// took as its own is not read as MCP.

export const mcpCalls: ExchangeStep = {
  name: 'mcp',
  handles: 'exchange',
  reads: 'a JSON request body and its answer, as MCP JSON-RPC',
  writes: ['tool_calls', 'security_rule_events'],
  description: 'Parses MCP JSON-RPC out of the exchange: tools/call as a tool call of origin mcp, and every message as an MCP event',
  capabilities: ['body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['tool_calls', 'security_rule_events']),
  record: (facts, state) => {
    const { ex } = facts;
    if (facts.claimedBy !== null || ex.decision !== 'allowed' || !facts.requestLooksJson) return {};
    const requestJson = facts.requestJson();
    if (requestJson === undefined) return {};
    const mcp = parseMcpExchange(requestJson, header(ex.responseHeaders, 'content-type'), facts.response.bytes);
    if (mcp.length === 0) return {};
    const at = ex.startedAt.toISOString();
    const trace = state.lastTrace;
    const identity = { trace_id: trace, turn_id: trace };
    const server = `${ex.host}:${ex.port}`;
    const eventJson = mcp.map((message) => JSON.stringify(message.facts));
    return {
      rows: (eventId, sink) => {
        mcp.forEach((message, index) => {
          if (message.serverName) state.mcpServers.set(server, message.serverName);
          let ruleEventId = eventId;
          if (message.method === 'tools/call') {
            const toolCall = sink.append('tool_calls', {
              ...identity,
              timestamp: at,
              model_call_id: null,
              provider: 'mcp',
              status: message.error ? 'error' : message.result !== undefined ? 'responded' : 'requested',
              call_index: 0,
              call_id: `mcp-${eventId}-${message.id ?? 'n'}`,
              tool_name: message.toolName ?? '(unnamed)',
              arguments: message.arguments ?? null,
              response_preview: message.resultText?.slice(0, PREVIEW) ?? null,
              origin: 'mcp',
              server_name: state.mcpServers.get(server) ?? server,
              method: message.method,
              request_id: message.id ?? null,
              decision: ex.decision,
              duration_ms: ex.durationMs,
              error_message: message.error ?? null,
              process_name: ex.processName,
              bytes_sent: ex.requestBody.total,
              bytes_received: ex.responseBody.total,
              policy_rule: ex.matchedRule,
            });
            ruleEventId = toolCall?.eventId ?? eventId;
          }
          sink.append('security_rule_events', {
            event_id: ruleEventId,
            ...identity,
            timestamp: at,
            timestamp_unix_ms: ex.startedAt.getTime(),
            event_type: message.method === 'tools/call' ? 'mcp.tool_call' : message.method === 'tools/list' ? 'mcp.tool_list' : 'mcp.event',
            rule_id: ex.matchedRule,
            rule_action: 'allow',
            detection_level: 'none',
            event_json: eventJson[index]!,
          });
        });
      },
    };
  },
};
