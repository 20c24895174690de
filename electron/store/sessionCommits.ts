import { EventEmitter } from 'node:events';

// Every commit by a session writer of this process, by the session.db it went to. A reader in the
// same process learns of new rows the moment they land, where SQLite's data_version would only
// tell it at its next poll. Writers in other processes are not heard here: readers still poll.

export const sessionCommits = new EventEmitter<{ commit: [dbPath: string] }>();
// One listener per change feed (a window and an API server at most), never per client.
sessionCommits.setMaxListeners(0);
