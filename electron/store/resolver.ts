import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { isSessionId, SHORT_ID_LENGTH, type SessionId } from '../contract/ids.ts';
import type { CapsemHome } from './paths.ts';
import { sessionPaths } from './paths.ts';

// The one place a user's words become a session id. CLI arguments, the search box and "resume"
// all come through here; everything past this edge sees ids only.
//
// What a typed word means, in order: a whole session id; else the sessions it names and the
// sessions whose id starts with it (from MIN_ID_PREFIX characters), taken together. One session
// among them is the answer; several are an error listing them, so a display name that happens to
// be hex (`deadbeef`) works as a name, and the rare id that also starts with it makes the word
// ambiguous instead of silently picking one of the two.

/** The fewest characters of an id that resolve to it: as many as the window shows of an id. */
export const MIN_ID_PREFIX = SHORT_ID_LENGTH;

/** The start of a session id as typed: lowercase hex and the UUID's dashes. */
const ID_PREFIX = /^[0-9a-f][0-9a-f-]*$/;

/** Whether a typed word (lowercased) is long enough, and of the right characters, to be the start of an id. */
function isIdPrefix(lower: string): boolean {
  return lower.length >= MIN_ID_PREFIX && ID_PREFIX.test(lower);
}

/** A session a word may mean, as an error lists it. */
export interface SessionCandidate {
  readonly id: SessionId;
  readonly name: string | null;
  readonly createdAt: string;
}

export class UnknownSessionError extends Error {
  override name = 'UnknownSessionError';
  constructor(
    readonly input: string,
    readonly closeMatches: readonly string[],
  ) {
    const shortPrefix = ID_PREFIX.test(input.toLowerCase()) && input.length < MIN_ID_PREFIX;
    super(
      `no session with id or name "${input}"` +
        (shortPrefix ? ` (an id matches from its first ${MIN_ID_PREFIX} characters)` : '') +
        (closeMatches.length > 0 ? `; close matches: ${closeMatches.join(', ')}` : '; run `capsem list --all` to see every session'),
    );
  }
}

export class AmbiguousSessionError extends Error {
  override name = 'AmbiguousSessionError';
  constructor(
    readonly input: string,
    readonly candidates: readonly SessionCandidate[],
  ) {
    super(ambiguity(input, candidates));
  }
}

function ambiguity(input: string, candidates: readonly SessionCandidate[]): string {
  const named = candidates.filter((c) => c.name === input);
  const prefix = input.toLowerCase();
  const prefixed = isIdPrefix(prefix) ? candidates.filter((c) => c.id.startsWith(prefix)) : [];
  if (prefixed.length === 0)
    return (
      `the name "${input}" belongs to ${candidates.length} ended sessions; use an id: ` +
      candidates.map((c) => `${c.id} (created ${c.createdAt})`).join(', ')
    );
  const what = [
    named.length > 0 ? `the name of ${named.length === 1 ? 'a session' : `${named.length} sessions`}` : '',
    `the start of ${prefixed.length === 1 ? 'the id of a session' : `${prefixed.length} session ids`}`,
  ].filter(Boolean);
  return (
    `"${input}" is ${what.join(' and ')}; use more of the id: ` +
    candidates.map((c) => `${c.id} (${c.name ?? 'unnamed'}, created ${c.createdAt})`).join(', ')
  );
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

/** The sessions a name means: its resumable holder alone when there is one, else every ended session that carried it. */
function sessionsNamed(db: Database.Database, name: string): SessionCandidate[] {
  const named = db
    .prepare('SELECT id, name, resumable, created_at AS createdAt FROM sessions WHERE name = ? ORDER BY resumable DESC, created_at DESC')
    .all(name) as (SessionCandidate & { resumable: number })[];
  const holder = named.find((row) => row.resumable === 1);
  return (holder ? [holder] : named).map(({ id, name: n, createdAt }) => ({ id, name: n, createdAt }));
}

/** The sessions whose id starts with `prefix`, when it is long enough to be meant as an id. */
function sessionsWithIdPrefix(db: Database.Database, prefix: string): SessionCandidate[] {
  if (!isIdPrefix(prefix)) return [];
  // The prefix holds no GLOB metacharacters (checked above), and GLOB on the key uses its index.
  return db
    .prepare('SELECT id, name, created_at AS createdAt FROM sessions WHERE id GLOB ? ORDER BY created_at DESC')
    .all(`${prefix}*`) as SessionCandidate[];
}

/**
 * A whole id first; else the one session that the word names or whose id it starts (from
 * MIN_ID_PREFIX characters). A name held by a resumable session means that session; one that only
 * ended sessions carried means each of them.
 */
export function resolveSession(home: CapsemHome, db: Database.Database, input: string): SessionId {
  const trimmed = input.trim();
  const lower = trimmed.toLowerCase();
  if (isSessionId(lower)) {
    const known = db.prepare('SELECT 1 FROM sessions WHERE id = ?').get(lower);
    if (known || existsSync(sessionPaths(home, lower).dbPath)) return lower;
  }
  const candidates = new Map<string, SessionCandidate>();
  for (const c of [...sessionsNamed(db, trimmed), ...sessionsWithIdPrefix(db, lower)]) candidates.set(c.id, c);
  if (candidates.size === 1) return [...candidates.keys()][0] as SessionId;
  if (candidates.size > 1) throw new AmbiguousSessionError(trimmed, [...candidates.values()]);
  throw new UnknownSessionError(trimmed, closeMatches(db, trimmed));
}
