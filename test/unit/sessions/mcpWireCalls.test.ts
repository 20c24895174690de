import { describe, expect, it } from 'vitest';
import { mcpWireCalls } from '../../../electron/sessions/foreignDatabases.ts';

const rpc = (id: number, method: string, name?: string): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id,
  method,
  params: name === undefined ? {} : { name, arguments: {} },
});

describe('mcpWireCalls', () => {
  it('counts tools/call requests by tool, batches included, and counts bodies it cannot read apart', () => {
    const bodies = [
      JSON.stringify(rpc(1, 'tools/call', 'echo')),
      JSON.stringify([rpc(2, 'tools/call', 'echo'), rpc(3, 'tools/call', 'read'), rpc(4, 'tools/list')]),
      JSON.stringify(rpc(5, 'tools/call')),
      Buffer.from(JSON.stringify(rpc(6, 'tools/call', 'read'))),
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"na',
      JSON.stringify({ method: 'tools/call', params: { name: 'not json-rpc' } }),
      42,
      null,
    ];
    const wire = mcpWireCalls(bodies);
    expect([...wire.byTool]).toEqual([
      ['echo', 2],
      ['read', 2],
      ['(unnamed)', 1],
    ]);
    expect(wire.unreadable).toBe(3);
  });
});
