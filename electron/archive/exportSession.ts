import type Database from 'better-sqlite3';
import { existsSync, linkSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SessionEventStore } from '../sessions/sessionEventStore.ts';
import type { SessionId } from '../contract/ids.ts';
import { openSessionDbReadOnly } from '../store/sessionDb.ts';
import type { CapsemHome } from '../store/paths.ts';
import { getSession } from '../store/registry.ts';
import { FileSink } from './chunkSink.ts';
import { CONTENTS_MEMBER, namedContents, writeContentsPack } from './contentsPack.ts';
import { buildManifest, writeArchive } from './exportArchive.ts';
import { writeHar } from './exportHar.ts';
import { writeJsonl } from './exportJsonl.ts';
import { snapshotSession, type SnapshotFile, type StepProgress } from './sessionSnapshot.ts';
import { makeStagingDir } from './stagingDir.ts';

// The one exporter, behind `capsem export` and the app's Export: a consistent snapshot first
// (backup API for a live session, the compressed copy for a vacuumed one), then the format. The
// output is written under a temporary name beside the target and renamed at the end, so a failed
// or interrupted export leaves no half file, and an existing file is never replaced.

export const EXPORT_FORMATS = ['archive', 'har', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_EXTENSIONS: Record<ExportFormat, string> = { archive: '.capsem', har: '.har', jsonl: '.jsonl' };

export interface ExportOptions {
  readonly format: ExportFormat;
  readonly out: string;
  readonly gzip?: boolean;
  readonly onProgress?: (stage: string, done: number, total: number) => void;
}

export interface ExportResult {
  readonly path: string;
  readonly bytes: number;
  /** Archive: members; HAR: entries; JSONL: events. */
  readonly items: number;
}

export class ExportTargetExistsError extends Error {
  override name = 'ExportTargetExistsError';
}

/** The contents the snapshot's session.db names, packed at `path` from the home's store, or null when it keeps none. */
async function packContents(home: CapsemHome, dbPath: string, path: string, onProgress?: StepProgress): Promise<SnapshotFile | null> {
  const db = openSessionDbReadOnly(dbPath);
  let named: Set<string>;
  try {
    named = namedContents(db);
  } finally {
    db.close();
  }
  const packed = await writeContentsPack(home, named, path, onProgress);
  return packed ? { path, bytes: packed.bytes } : null;
}

export async function exportSession(
  home: CapsemHome,
  mainDb: Database.Database,
  id: SessionId,
  options: ExportOptions,
): Promise<ExportResult> {
  if (existsSync(options.out)) throw new ExportTargetExistsError(`${options.out} already exists; choose another -o or remove it first`);
  const record = getSession(mainDb, id);
  const staging = makeStagingDir(home, 'export');
  const partial = join(dirname(options.out), `.${basename(options.out)}.partial-${process.pid}-${Date.now()}`);
  const progress = options.onProgress;
  try {
    const snapshot = await snapshotSession(home, id, staging, (done, total) => progress?.('snapshot', done, total));
    let items: number;
    if (options.format === 'archive') {
      const contents = await packContents(home, snapshot.db.path, join(staging.path, CONTENTS_MEMBER), (done, total) =>
        progress?.('contents', done, total),
      );
      const manifest = await buildManifest(
        { ...snapshot, ...(contents ? { contents } : {}) },
        {
          id,
          name: record?.name ?? null,
          status: record?.status ?? null,
          createdAt: record?.createdAt ?? null,
          stoppedAt: record?.stoppedAt ?? null,
        },
        { onProgress: progress },
      );
      await writeArchive({ ...snapshot, ...(contents ? { contents } : {}) }, manifest, partial, {
        gzip: options.gzip,
        onProgress: progress,
      });
      items = manifest.members.length;
    } else {
      const sink = new FileSink(partial);
      try {
        if (options.format === 'har') {
          const db = openSessionDbReadOnly(snapshot.db.path);
          try {
            items = await writeHar(db, id, sink, (done, total) => progress?.('har', done, total));
          } finally {
            db.close();
          }
        } else {
          const store = SessionEventStore.open(id, snapshot.db.path);
          try {
            items = await writeJsonl(store, sink, (done, total) => progress?.('jsonl', done, total));
          } finally {
            store.close();
          }
        }
        await sink.close();
      } catch (err) {
        sink.destroy();
        throw err;
      }
    }
    // link + unlink rather than rename: a file that appeared at the target meanwhile is refused, not replaced.
    linkSync(partial, options.out);
    rmSync(partial, { force: true });
    return { path: options.out, bytes: statSync(options.out).size, items };
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    staging.remove();
  }
}
