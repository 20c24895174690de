import { parentPort, workerData } from 'node:worker_threads';
import { ArchiveRejectedError } from './archiveFormat.ts';
import { adoptStagedContents } from './contentsPack.ts';
import { asImportError, checkStagedDb, type StagedDbJob, type StagedDbMessage } from './stagedDbCheck.ts';

// The import's check thread: one staged session.db checked and prepared, and the workspace contents
// that came with it checked and stored, then the thread ends. A
// file that takes minutes to check costs this thread, never the one serving the window.

const port = parentPort;
if (!port) throw new Error('stagedDbWorker must run in a worker thread');
const send = (message: StagedDbMessage): void => port.postMessage(message);

try {
  const job = workerData as StagedDbJob;
  const facts = checkStagedDb(job, (done, total) => send({ kind: 'step', done, total }));
  // The contents are checked here too, off the thread that serves the window: a pack may hold gigabytes.
  send({
    kind: 'checked',
    facts: job.contents ? { ...facts, contents: adoptStagedContents(job.dbPath, job.contents.home, job.contents.pack) } : facts,
  });
} catch (err) {
  const error = asImportError(err);
  send(error instanceof ArchiveRejectedError ? { kind: 'refused', message: error.message } : { kind: 'failed', message: error.message });
}
