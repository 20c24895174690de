import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { EXPORT_EXTENSIONS, exportSession, type ExportFormat } from '../archive/exportSession.ts';
import type { SessionId } from '../contract/ids.ts';
import { ensurePrivateDir, type CapsemHome } from '../store/paths.ts';
import { SessionDbMissingError } from '../store/sessionDb.ts';
import { CallFailure } from './callFailure.ts';

// sessions.export: the app's Export writes through the one exporter (electron/archive), as the
// CLI does, to CAPSEM_HOME/exports/<id>-<time>.<ext>. The file is private (0600) like everything
// recorded. A vacuumed session exports from its compressed copy.

export async function exportForApp(
  home: CapsemHome,
  mainDb: Database.Database,
  id: SessionId,
  format: ExportFormat,
  now = new Date(),
): Promise<{ path: string; bytes: number }> {
  const dir = join(home.root, 'exports');
  ensurePrivateDir(dir);
  const out = join(dir, `${id}-${now.toISOString().replace(/[:.]/g, '-')}${EXPORT_EXTENSIONS[format]}`);
  try {
    const { path, bytes } = await exportSession(home, mainDb, id, { format, out });
    return { path, bytes };
  } catch (err) {
    if (err instanceof SessionDbMissingError) throw new CallFailure('not_on_disk', err.message);
    throw err;
  }
}
