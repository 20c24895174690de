import type { SearchHit, TableKind } from '../contract/appContract.ts';
import type { OpenSession } from './sessionStores.ts';

// sessions.search: the rows of every view whose text holds the query (case-insensitive for ASCII),
// looking in what a person reads: hosts and paths, previews, model text, tool arguments, file
// paths, commands. Full bodies are the events API's search (GET /v1/sessions/{id}/search); this is
// the quick box in a tab, so it answers from the columns in one indexed pass per table.

export const MAX_HITS = 200;

/** A LIKE pattern that matches `needle` anywhere, with the LIKE wildcards in it taken literally. */
export function containsPattern(needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const SOURCES: readonly { kind: TableKind; table: string; seq: string; columns: readonly string[] }[] = [
  {
    kind: 'net',
    table: 'net_events',
    seq: 'seq',
    columns: ['domain', 'path', 'query', 'request_body_preview', 'response_body_preview', 'error_message'],
  },
  {
    kind: 'model',
    table: 'model_calls',
    seq: 'seq',
    columns: ['model', 'text_content', 'thinking_content', 'request_body_preview', 'system_prompt_preview'],
  },
  { kind: 'tool', table: 'tool_calls', seq: 'seq', columns: ['tool_name', 'arguments', 'response_preview', 'error_message'] },
  { kind: 'file', table: 'fs_events', seq: 'seq', columns: ['path'] },
  { kind: 'exec', table: 'exec_events', seq: 'id', columns: ['argv', 'stdout_preview', 'stderr_preview', 'error_message'] },
];

/** Up to 120 characters of `text` around the first match. */
function snippet(text: string, needle: string): string {
  const at = text.toLowerCase().indexOf(needle);
  if (at < 0) return text.slice(0, 120);
  const from = Math.max(0, at - 40);
  return `${from > 0 ? '…' : ''}${text.slice(from, from + 120)}${from + 120 < text.length ? '…' : ''}`.replace(/\s+/g, ' ');
}

export function searchColumns(session: OpenSession, query: string): SearchHit[] {
  const tables = session.tables();
  const needle = query.toLowerCase();
  const pattern = containsPattern(query);
  const hits: SearchHit[] = [];
  for (const source of SOURCES) {
    if (!tables.has(source.table)) continue;
    const where = source.columns.map((c) => `${c} LIKE ? ESCAPE '\\'`).join(' OR ');
    const rows = session.store.db
      .prepare(
        `SELECT ${source.seq} AS seq, timestamp AS at, ${source.columns.join(', ')} FROM ${source.table} WHERE ${where} ORDER BY ${source.seq} LIMIT ?`,
      )
      .all(...source.columns.map(() => pattern), MAX_HITS) as Record<string, string | number | null>[];
    for (const row of rows) {
      const found = source.columns.map((c) => row[c]).find((v): v is string => typeof v === 'string' && v.toLowerCase().includes(needle));
      hits.push({
        kind: source.kind,
        seq: Number(row.seq),
        at: String(row.at),
        snippet: snippet(found ?? String(row[source.columns[0]!] ?? ''), needle),
      });
    }
  }
  return hits.sort((a, b) => a.at.localeCompare(b.at) || a.seq - b.seq).slice(0, MAX_HITS);
}
