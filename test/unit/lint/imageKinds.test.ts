import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { IMAGE_KINDS } from '../../../electron/contract/guestImages.ts';

// A guest image kind is written in two places: its entry in the list (electron/contract/
// guestImages.ts) and its recipe entry (electron/vm/image/imageRecipe.ts). Everything else reads
// them, so a new image touches those two files and its recipe files. This scan keeps it so: a
// string literal spelling an image kind anywhere else in electron/ or renderer/ is a branch or an
// enum someone wrote out again.

const HOMES = ['electron/contract/guestImages.ts', 'electron/vm/image/imageRecipe.ts'];

/** Literals that spell a kind's id but mean something else: file and literal, to why. */
const OTHER_MEANINGS: Readonly<Record<string, string>> = {
  "electron/api/usage.ts: 'agent'": "the events API's usage grouped by the calling program (USAGE_GROUPS)",
  "electron/sessions/conversationOrder.ts: 'agent'": "a timeline turn's agent field, picked by name",
  "renderer/views/TimelineView.tsx: 'agent'": "a Timeline lane's kind: an agent's lane, not a host's",
  "renderer/views/timeline/timelineModel.ts: 'agent'": "a Timeline lane's kind: an agent's lane, not a host's",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every string literal (in values and in types) whose text is one of `words`, as "line: 'text'". */
function literalsSpelling(source: string, fileName: string, words: readonly string[]): string[] {
  const file = ts.createSourceFile(
    fileName,
    source,
    ts.ScriptTarget.Latest,
    true,
    fileName.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && words.includes(node.text)) {
      found.push(`${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}: '${node.text}'`);
    }
    node.forEachChild(visit);
  };
  visit(file);
  return found;
}

describe('image kinds', () => {
  it('finds a kind spelled as a value, a type or a template, and not as a property name', () => {
    const source = [
      "const a = kind === 'minimal';",
      "type B = 'agent' | 'other';",
      'const c = `agent`;',
      "const d = { agent: 1, minimal: 'agent image' };",
      'const e = <option value="minimal">x</option>;',
    ].join('\n');
    expect(literalsSpelling(source, 'probe.tsx', ['agent', 'minimal'])).toEqual([
      "1: 'minimal'",
      "2: 'agent'",
      "3: 'agent'",
      "5: 'minimal'",
    ]);
  });

  it('are spelled out only in the list of guest images and the recipe entries', () => {
    const found: string[] = [];
    for (const path of [...sourceFiles('electron'), ...sourceFiles('renderer')]) {
      if (HOMES.includes(path)) continue;
      for (const hit of literalsSpelling(readFileSync(path, 'utf8'), path, IMAGE_KINDS)) {
        const text = hit.slice(hit.indexOf(': ') + 2);
        if (!Object.hasOwn(OTHER_MEANINGS, `${path}: ${text}`)) found.push(`${path}:${hit}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('still meets every literal it lets through, so none of them outlives its reason', () => {
    for (const key of Object.keys(OTHER_MEANINGS)) {
      const [path, text] = key.split(': ') as [string, string];
      const hits = literalsSpelling(readFileSync(path, 'utf8'), path, [text.slice(1, -1)]);
      expect(hits.length, key).toBeGreaterThan(0);
    }
  });
});
