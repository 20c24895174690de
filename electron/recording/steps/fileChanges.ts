import { writesTo, type EventStep } from './step.ts';

// The guest's file changes as fs_events rows: a change to a path of its own at once, with its
// content before and after; the changes under .git/ and node_modules/ summarised when their batch
// ends (../fsEventRows.ts says why); and the host's own writes to the shared folder (a revert).

export const fileChanges: EventStep<'fs'> = {
  name: 'file-changes',
  handles: 'fs',
  reads: "the guest agent's batches of file changes under /workspace, with what the host read of each, and the host's reverts",
  writes: ['fs_events'],
  description:
    "Records the guest's file changes with their contents before and after; what happens under .git/ and node_modules/ is one row per batch, folder and action",
  capabilities: [],
  actions: ['observe'],
  readsBody: false,
  config: writesTo(['fs_events']),
  record: (event, state) => {
    if ('hostWrote' in event) {
      const { path, after_hash, after_mode } = event.hostWrote;
      state.fsRows.wrote(path, after_hash != null && after_mode != null ? { hash: after_hash, mode: after_mode } : null);
      return [{ table: 'fs_events', row: event.hostWrote }];
    }
    return ('batchEnd' in event ? state.fsRows.flush() : state.fsRows.take(event.changes)).map((row) => ({ table: 'fs_events', row }));
  },
};
