import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { isSessionId, type SessionId } from '../contract/ids.ts';
import type { CapsemHome } from './paths.ts';
import { sessionPaths } from './paths.ts';

// The one place a user's words become a session id. CLI arguments, the search box and "resume"
// all come through here; everything past this edge sees ids only.

export class UnknownSessionError extends Error {
  override name = 'UnknownSessionError';
  constructor(
    readonly input: string,
    readonly closeMatches: readonly string[],
  ) {
    super(
      `no session with id or name "${input}"` +
        (closeMatches.length > 0 ? `; close matches: ${closeMatches.join(', ')}` : '; run `capsem list --all` to see every session'),
    );
  }
}

export class AmbiguousSessionError extends Error {
  override name = 'AmbiguousSessionError';
  constructor(
    readonly input: string,
    readonly candidates: readonly { id: string; createdAt: string }[],
  ) {
    super(
      `the name "${input}" belongs to ${candidates.length} ended sessions; use an id: ` +
        candidates.map((c) => `${c.id} (created ${c.createdAt})`).join(', '),
    );
  }
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

function closeMatches(db: Database.Database, input: string): string[] {
  const needle = input.toLowerCase();
  const rows = db.prepare('SELECT id, name FROM sessions ORDER BY created_at DESC').all() as { id: string; name: string | null }[];
  const found = new Set<string>();
  for (const { id, name } of rows) {
    if (needle.length >= 4 && id.startsWith(needle)) found.add(name ? `${name} (${id})` : id);
    if (!name) continue;
    const lower = name.toLowerCase();
    const budget = Math.max(1, Math.floor(lower.length / 3));
    if (lower.includes(needle) || needle.includes(lower) || editDistance(lower, needle) <= budget) found.add(`${name} (${id})`);
  }
  return [...found].slice(0, 5);
}

/**
 * Exact id first, then name. A name held by a resumable session wins; otherwise a name that only
 * one ended session carries resolves to it, and one that several carry is ambiguous.
 */
export function resolveSession(home: CapsemHome, db: Database.Database, input: string): SessionId {
  const trimmed = input.trim();
  const lower = trimmed.toLowerCase();
  if (isSessionId(lower)) {
    const known = db.prepare('SELECT 1 FROM sessions WHERE id = ?').get(lower);
    if (known || existsSync(sessionPaths(home, lower).dbPath)) return lower;
  }
  const named = db
    .prepare('SELECT id, resumable, created_at AS createdAt FROM sessions WHERE name = ? ORDER BY resumable DESC, created_at DESC')
    .all(trimmed) as { id: SessionId; resumable: number; createdAt: string }[];
  const holder = named.find((row) => row.resumable === 1);
  if (holder) return holder.id;
  if (named.length === 1) return named[0]!.id;
  if (named.length > 1) throw new AmbiguousSessionError(trimmed, named);
  throw new UnknownSessionError(trimmed, closeMatches(db, trimmed));
}
