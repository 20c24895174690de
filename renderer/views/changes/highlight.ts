import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import makefile from 'highlight.js/lib/languages/makefile';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

// Syntax colour for diff lines. highlight.js's core with the languages a workspace mostly holds,
// registered by hand: the full bundle's 190 languages would triple the renderer's size.

const LANGUAGES = {
  bash,
  c,
  cpp,
  css,
  dockerfile,
  go,
  ini,
  java,
  javascript,
  json,
  makefile,
  markdown,
  python,
  ruby,
  rust,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

const BY_EXTENSION: Readonly<Record<string, keyof typeof LANGUAGES>> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  pyi: 'python',
  rb: 'ruby',
  rs: 'rust',
  go: 'go',
  java: 'java',
  c: 'c',
  h: 'c',
  cc: 'cpp',
  cpp: 'cpp',
  cxx: 'cpp',
  hpp: 'cpp',
  hh: 'cpp',
  css: 'css',
  scss: 'css',
  json: 'json',
  jsonc: 'json',
  html: 'xml',
  htm: 'xml',
  xml: 'xml',
  svg: 'xml',
  vue: 'xml',
  md: 'markdown',
  markdown: 'markdown',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'ini',
  ini: 'ini',
  cfg: 'ini',
  conf: 'ini',
  sql: 'sql',
  sh: 'bash',
  bash: 'bash',
  zsh: 'bash',
};
const BY_NAME: Readonly<Record<string, keyof typeof LANGUAGES>> = {
  dockerfile: 'dockerfile',
  makefile: 'makefile',
  gnumakefile: 'makefile',
  '.bashrc': 'bash',
  '.profile': 'bash',
};

/** The language a path's name says, or null for one drawn plain. */
export function languageOf(path: string): string | null {
  const name = (path.split('/').at(-1) ?? '').toLowerCase();
  if (BY_NAME[name]) return BY_NAME[name];
  const dot = name.lastIndexOf('.');
  return dot > 0 ? (BY_EXTENSION[name.slice(dot + 1)] ?? null) : null;
}

/** A run of a line's text and the highlighter's classes for it ('' for none). */
export interface Segment {
  readonly text: string;
  readonly className: string;
}

/** Above this many characters a block is drawn plain: a minified bundle's one line would stall the window. */
const HIGHLIGHT_MAX_CHARS = 200_000;

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&#39;': "'" };
const unescape = (html: string) => html.replace(/&(?:amp|lt|gt|quot|#x27|#39);/g, (e) => ENTITIES[e] ?? e);

/**
 * highlight.js's HTML for a block, cut into lines of segments: a span open across a line break
 * (a multi-line comment or string) carries its classes into the next line. Only highlight.js's
 * own markup is read (spans and escaped text), and the segments are drawn as text, never as HTML.
 */
export function splitHighlighted(html: string): Segment[][] {
  const lines: Segment[][] = [[]];
  const open: string[] = [];
  const token = /<span class="([^"]*)">|<\/span>|\n|[^<\n]+/g;
  for (const [match, classes] of html.matchAll(token)) {
    if (classes !== undefined) open.push(classes);
    else if (match === '</span>') open.pop();
    else if (match === '\n') lines.push([]);
    else lines.at(-1)!.push({ text: unescape(match), className: open.join(' ') });
  }
  return lines;
}

/**
 * Each of `lines` as segments, highlighted as one block in `language` (so a construct spanning
 * lines reads right); plain where there is no language, the block is too large, or the
 * highlighter's lines do not come back one for one with the text's.
 */
export function highlightLines(lines: readonly string[], language: string | null): Segment[][] {
  const plain = () => lines.map((text) => (text ? [{ text, className: '' }] : []));
  const code = lines.join('\n');
  if (language === null || code.length > HIGHLIGHT_MAX_CHARS || !hljs.getLanguage(language)) return plain();
  try {
    const split = splitHighlighted(hljs.highlight(code, { language, ignoreIllegals: true }).value);
    const intact = split.length === lines.length && split.every((segments, i) => segments.map((s) => s.text).join('') === lines[i]);
    return intact ? split : plain();
  } catch {
    return plain();
  }
}
