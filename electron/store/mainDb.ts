import Database from 'better-sqlite3';
import { endAbandonedSessions } from './abandonedSessions.ts';
import { migrate, type Migration } from './migrate.ts';
import { ensureHome, makePrivateFiles, type CapsemHome } from './paths.ts';

// main.db: one row per session (the registry of names lives here too, so a name and the session
// it belongs to change in one transaction) plus the per-session usage rollups. Its figures
// outlive the session.db they were computed from.

export const SESSION_STATUSES = ['running', 'stopped', 'crashed', 'vacuumed', 'terminated', 'erased'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

const V1 = `
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  name TEXT,
  resumable INTEGER NOT NULL DEFAULT 0,
  mode TEXT NOT NULL DEFAULT 'vm',
  command TEXT,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN (${SESSION_STATUSES.map((s) => `'${s}'`).join(', ')})),
  status_reason TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  stopped_at TEXT,
  rolled_up_at TEXT,
  scratch_disk_size_gb INTEGER,
  ram_bytes INTEGER,
  total_requests INTEGER NOT NULL DEFAULT 0,
  allowed_requests INTEGER NOT NULL DEFAULT 0,
  denied_requests INTEGER NOT NULL DEFAULT 0,
  total_model_calls INTEGER NOT NULL DEFAULT 0,
  total_input_tokens INTEGER NOT NULL DEFAULT 0,
  total_output_tokens INTEGER NOT NULL DEFAULT 0,
  total_estimated_cost REAL NOT NULL DEFAULT 0,
  total_tool_calls INTEGER NOT NULL DEFAULT 0,
  total_mcp_calls INTEGER NOT NULL DEFAULT 0,
  total_file_events INTEGER NOT NULL DEFAULT 0,
  exec_count INTEGER NOT NULL DEFAULT 0,
  event_count INTEGER NOT NULL DEFAULT 0,
  last_event_at TEXT,
  inference_host TEXT,
  agent TEXT,
  audit_event_count INTEGER NOT NULL DEFAULT 0,
  compressed_size_bytes INTEGER,
  vacuumed_at TEXT,
  storage_mode TEXT,
  rootfs_hash TEXT,
  rootfs_version TEXT,
  forked_from TEXT,
  persistent INTEGER NOT NULL DEFAULT 0
);
-- Names are unique among sessions that can still be resumed; an ended one gives its name up.
CREATE UNIQUE INDEX sessions_resumable_name ON sessions(name) WHERE resumable = 1;
CREATE INDEX sessions_name ON sessions(name);
CREATE INDEX sessions_created ON sessions(created_at);

CREATE TABLE ai_usage (
  session_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL DEFAULT '',
  call_count INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  estimated_cost REAL NOT NULL DEFAULT 0,
  total_duration_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, provider, model)
);

CREATE TABLE tool_usage (
  session_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  origin TEXT NOT NULL,
  call_count INTEGER NOT NULL DEFAULT 0,
  error_count INTEGER NOT NULL DEFAULT 0,
  total_duration_ms INTEGER NOT NULL DEFAULT 0,
  bytes_sent INTEGER NOT NULL DEFAULT 0,
  bytes_received INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, tool_name, origin)
);

CREATE TABLE mcp_usage (
  session_id TEXT NOT NULL,
  server_name TEXT NOT NULL,
  call_count INTEGER NOT NULL DEFAULT 0,
  error_count INTEGER NOT NULL DEFAULT 0,
  total_duration_ms INTEGER NOT NULL DEFAULT 0,
  bytes_sent INTEGER NOT NULL DEFAULT 0,
  bytes_received INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, server_name)
);
`;

// The process recording a running session (the app, or the capsem command running it), named as
// the owner lock names its holder, so a reader can tell a session whose recorder was killed.
const V2 = `
ALTER TABLE sessions ADD COLUMN runner_pid INTEGER;
ALTER TABLE sessions ADD COLUMN runner_start TEXT;
`;

export const MAIN_DB_MIGRATIONS: readonly Migration[] = [
  { version: 1, up: (db) => db.exec(V1) },
  { version: 2, up: (db) => db.exec(V2) },
];

export function openMainDb(home: CapsemHome): Database.Database {
  ensureHome(home);
  const db = new Database(home.mainDbPath);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    migrate(db, `main database ${home.mainDbPath}`, MAIN_DB_MIGRATIONS);
    makePrivateFiles(home.mainDbPath);
    // Whoever opens main.db first after a recorder was killed ends its sessions: every command
    // that reads sessions opens it, and the first to see one shows it crashed.
    endAbandonedSessions(home, db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
