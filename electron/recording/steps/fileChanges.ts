import { writesTo, type EventStep } from './step.ts';

// The guest's file changes as fs_events rows: a change to a path of its own at once, the changes
// under .git/ and node_modules/ summarised when their batch ends (../fsEventRows.ts says why).

export const fileChanges: EventStep<'fs'> = {
  name: 'file-changes',
  handles: 'fs',
  reads: "the guest agent's batches of file changes under /workspace",
  writes: ['fs_events'],
  description: "Records the guest's file changes; what happens under .git/ and node_modules/ is one row per batch, folder and action",
  capabilities: [],
  actions: ['observe'],
  readsBody: false,
  config: writesTo(['fs_events']),
  record: (event, state) =>
    ('batchEnd' in event ? state.fsRows.flush() : state.fsRows.take(event.changes)).map((row) => ({ table: 'fs_events', row })),
};
