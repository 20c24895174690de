import { parentPort, workerData } from 'node:worker_threads';
import { ArchiveRejectedError } from './archiveFormat.ts';
import { asImportError, checkStagedDb, type StagedDbJob, type StagedDbMessage } from './stagedDbCheck.ts';

// The import's check thread: one staged session.db checked and prepared, then the thread ends. A
// file that takes minutes to check costs this thread, never the one serving the window.

const port = parentPort;
if (!port) throw new Error('stagedDbWorker must run in a worker thread');
const send = (message: StagedDbMessage): void => port.postMessage(message);

try {
  send({ kind: 'checked', facts: checkStagedDb(workerData as StagedDbJob, (done, total) => send({ kind: 'step', done, total })) });
} catch (err) {
  const error = asImportError(err);
  send(error instanceof ArchiveRejectedError ? { kind: 'refused', message: error.message } : { kind: 'failed', message: error.message });
}
