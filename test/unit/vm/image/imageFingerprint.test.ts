import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { knownHash, rememberHash } from '../../../../electron/vm/image/imageFingerprint.ts';

const dir = mkdtempSync(join(tmpdir(), 'capsem-fingerprints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('keeps the eight newest fingerprints of a shared cache (app versions, homes), written whole', () => {
  // What an older version wrote (one entry per kind) is not read, only replaced.
  writeFileSync(join(dir, '.fingerprints.json'), JSON.stringify({ agent: { fingerprint: 'old', hash: 'h-old' } }));
  expect(knownHash(dir, 'agent', 'old')).toBeNull();
  for (let i = 0; i < 10; i++) rememberHash(dir, i % 2 ? 'agent' : 'minimal', `print-${i}`, `hash-${i}`);
  expect(knownHash(dir, 'agent', 'print-9')).toBe('hash-9');
  expect(knownHash(dir, 'minimal', 'print-2')).toBe('hash-2');
  expect(knownHash(dir, 'agent', 'print-1')).toBeNull();
  // Same fingerprint, other kind: not a match.
  expect(knownHash(dir, 'minimal', 'print-9')).toBeNull();
  // Remembering again moves an entry to the front instead of adding one.
  rememberHash(dir, 'minimal', 'print-2', 'hash-2');
  const entries = JSON.parse(readFileSync(join(dir, '.fingerprints.json'), 'utf8')) as { fingerprint: string }[];
  expect(entries.map((e) => e.fingerprint)).toEqual([
    'print-2',
    'print-9',
    'print-8',
    'print-7',
    'print-6',
    'print-5',
    'print-4',
    'print-3',
  ]);
  expect(readdirSync(dir)).toEqual(['.fingerprints.json']);
});
