import { existsSync } from 'node:fs';
import { isAgentName, type AgentName } from './codingAgents.ts';
import { openSessionDbReadOnly } from '../store/sessionDb.ts';

// What a VM session keeps in its session_meta for booting it again: the image it ran, the project
// folder it shared and the coding agent on its terminal (its name only: the key is never kept, a
// resume takes it from the resuming caller's environment).

const KEYS = ['vm_image', 'vm_workspace', 'vm_terminal_agent'] as const;

export interface VmSessionMeta {
  readonly vm_image?: string;
  readonly vm_workspace?: string;
  /** A name this build does not know (a newer build's agent) reads as none: the session resumes to a login shell. */
  readonly vm_terminal_agent?: AgentName;
}

export function readVmSessionMeta(dbPath: string): VmSessionMeta {
  if (!existsSync(dbPath)) return {};
  try {
    return metaOf(dbPath);
  } catch (err) {
    throw new Error(`${dbPath} cannot be read to boot its session again: ${(err as Error).message}`);
  }
}

function metaOf(dbPath: string): VmSessionMeta {
  const db = openSessionDbReadOnly(dbPath);
  try {
    const rows = db.prepare(`SELECT key, value FROM session_meta WHERE key IN (${KEYS.map(() => '?').join(', ')})`).all(...KEYS) as {
      key: (typeof KEYS)[number];
      value: unknown;
    }[];
    const meta: Record<string, string> = {};
    for (const { key, value } of rows) {
      if (typeof value !== 'string') continue;
      if (key === 'vm_terminal_agent' && !isAgentName(value)) continue;
      meta[key] = value;
    }
    return meta as VmSessionMeta;
  } finally {
    db.close();
  }
}
