import { writesTo, type EventStep } from './step.ts';

// One frame of an upgraded connection, written as it passes, under the event id its exchange's
// row will have when the connection ends.

export const webSocketFrames: EventStep<'frame'> = {
  name: 'websocket-frames',
  handles: 'frame',
  reads: 'each frame of an upgraded (WebSocket) connection as it passes',
  writes: ['ws_frames'],
  description: 'Records each frame of a WebSocket connection as it passes: direction, opcode, size and its content up to the body cap',
  capabilities: ['body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['ws_frames']),
  record: ({ netEventId, row }) => [
    {
      table: 'ws_frames',
      row: {
        net_event_id: netEventId,
        timestamp: row.at.toISOString(),
        direction: row.direction,
        opcode: row.opcode,
        fin: row.fin ? 1 : 0,
        size: row.size,
        stored_bytes: row.storedBytes,
        truncated: row.truncated ? 1 : 0,
        content: row.content,
        body: row.body,
      },
    },
  ],
};
