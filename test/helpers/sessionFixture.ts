import type { SessionId } from '../../electron/contract/ids.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import type { FsChange } from '../../electron/recording/fsEventRows.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { registerSession } from '../../electron/store/registry.ts';
import { rollUpSession } from '../../electron/store/rollup.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import { httpsExchange } from './exchanges.ts';

export interface LiveSession {
  readonly id: SessionId;
  /** For the rows no recording makes (another tool's, a corrupt one's); a test says why where it writes one. */
  readonly writer: SessionWriter;
  /** The recording pipeline over the writer: a test records exchanges, file changes and commands as a session does. */
  readonly recorder: SessionRecorder;
  end(): Promise<void>;
}

/** A registered, running session with an open writer, for tests that need to control its rows. */
export async function liveSession(home: CapsemHome, name: string | null = null): Promise<LiveSession> {
  const db = openMainDb(home);
  const record = registerSession(db, { name, mode: 'test' });
  db.close();
  const paths = sessionPaths(home, record.id);
  ensurePrivateDir(paths.dir);
  const writer = await SessionWriter.open(paths.dbPath, { session_id: record.id });
  const recorder = new SessionRecorder(writer, 1 << 20);
  return {
    id: record.id,
    writer,
    recorder,
    end: async () => {
      await recorder.settled();
      await writer.close();
      const main = openMainDb(home);
      rollUpSession(home, main, record.id, { status: 'stopped' });
      main.close();
    },
  };
}

export const now = (): string => new Date().toISOString();

/** A file change the guest agent reports, recorded through the pipeline's file-changes step. */
export function recordFileChange(
  session: Pick<LiveSession, 'recorder'>,
  path: string,
  fields: Partial<Pick<FsChange, 'action' | 'size' | 'ts_ms'>> = {},
): void {
  session.recorder.event('fs', { changes: [{ action: 'created', size: null, is_dir: false, ts_ms: Date.now(), path, ...fields }] });
}

const bodyOfSize = (total: number): Exchange['responseBody'] => ({ bytes: Buffer.alloc(0), total, truncated: total > 0 });

/**
 * An ended session of `rows` HTTPS exchanges recorded as the proxy's would be (one writer, batched,
 * through the recording pipeline): a GET to one of 50 hosts each, one in 97 denied, a millisecond
 * apart from 2025-01-01, their bodies counted but not kept. `extra` changes every exchange (a
 * function: a body kept is handed over to the writer thread, so each exchange needs its own).
 */
export async function bigSession(
  home: CapsemHome,
  name: string,
  rows: number,
  extra: () => Partial<Exchange> = () => ({}),
): Promise<SessionId> {
  const session = await liveSession(home, name);
  const start = Date.parse('2025-01-01T00:00:00Z');
  for (let i = 0; i < rows; i++) {
    const host = `host-${i % 50}.example`;
    void session.recorder.record(
      httpsExchange(host, `/item/${i}`, {
        startedAt: new Date(start + i),
        requestBody: bodyOfSize(10),
        responseBody: bodyOfSize(100),
        durationMs: 3,
        decision: i % 97 === 0 ? 'denied' : 'allowed',
        matchedRule: null,
        processName: 'curl',
        pid: null,
        ...extra(),
      }),
    );
    if (session.writer.needsDrain) await session.writer.drained();
  }
  await session.end();
  return session.id;
}
