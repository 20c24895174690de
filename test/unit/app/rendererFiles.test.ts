import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rendererFile } from '../../../electron/app/rendererFiles.ts';

describe('rendererFile', () => {
  const root = mkdtempSync(join(tmpdir(), 'capsem-files-'));
  const dir = join(root, 'renderer');
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), 'x');
  writeFileSync(join(dir, 'assets', 'app.js'), 'x');
  writeFileSync(join(root, 'secret.txt'), 'x');
  symlinkSync(join(root, 'secret.txt'), join(dir, 'assets', 'link.txt'));

  it('finds files inside the folder, index.html for a folder', () => {
    expect(rendererFile(dir, '/')).toBe(join(dir, 'index.html'));
    expect(rendererFile(dir, '/assets/app.js')).toBe(join(dir, 'assets', 'app.js'));
  });

  it('refuses anything that leads outside, however spelled', () => {
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/../../secret.txt',
      '/assets/link.txt',
      '/%00',
      '/%zz',
      '/assets',
    ]) {
      expect(rendererFile(dir, path), path).toBeNull();
    }
  });
});
