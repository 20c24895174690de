import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface SpecColumn {
  readonly name: string;
  readonly type: string;
  readonly notNull: boolean;
  readonly defaultValue: string | null;
  readonly primaryKey: boolean;
}

const SHARED_SPEC = fileURLToPath(new URL('../../../shared/spec/session-db.md', import.meta.url));
const VENDORED_SPEC = fileURLToPath(new URL('../fixtures/session-db.spec.md', import.meta.url));

/** The spec beside the checkout when there is one (CI lays shared/ there), else the vendored copy. */
export function specPaths(): { shared: string | null; vendored: string } {
  return { shared: existsSync(SHARED_SPEC) ? SHARED_SPEC : null, vendored: VENDORED_SPEC };
}

export function readSpec(): string {
  const { shared, vendored } = specPaths();
  return readFileSync(shared ?? vendored, 'utf8');
}

/** Every `CREATE TABLE name ( ... );` block in the markdown, as written: what another tool following the spec runs. */
export function specCreateTables(markdown: string): string[] {
  return [...markdown.matchAll(/CREATE TABLE \w+ \(\n[\s\S]*?\n\);/g)].map((m) => m[0]);
}

/** Every `CREATE TABLE name ( ... );` block in the markdown, column by column. */
export function parseSpecTables(markdown: string): Map<string, SpecColumn[]> {
  const tables = new Map<string, SpecColumn[]>();
  const block = /CREATE TABLE (\w+) \(\n([\s\S]*?)\n\);/g;
  for (const match of markdown.matchAll(block)) {
    const columns: SpecColumn[] = [];
    for (const raw of match[2]!.split('\n')) {
      const line = raw.replace(/--.*$/, '').trim().replace(/,$/, '');
      if (line === '') continue;
      const [name, type] = line.split(/\s+/);
      const defaultMatch = /DEFAULT\s+('(?:[^']|'')*'|\S+)/i.exec(line);
      columns.push({
        name: name!,
        type: type!.toUpperCase(),
        notNull: /NOT NULL/i.test(line),
        defaultValue: defaultMatch ? defaultMatch[1]! : null,
        primaryKey: /PRIMARY KEY/i.test(line),
      });
    }
    tables.set(match[1]!, columns);
  }
  return tables;
}
