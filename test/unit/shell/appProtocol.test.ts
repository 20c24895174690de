import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  APP_ENTRY_URL,
  CONTENT_SECURITY_POLICY,
  appResponseHeaders,
  isAppUrl,
  isInsideRoot,
  resolveAppAsset,
} from '../../../electron/shell/appProtocol.ts';
import { permissionAllowed } from '../../../electron/shell/permissions.ts';

const root = '/opt/capsem/dist/renderer';

describe('resolveAppAsset', () => {
  it('serves the entry and assets with their types', () => {
    expect(resolveAppAsset(root, APP_ENTRY_URL)).toEqual({
      kind: 'file',
      path: `${root}/index.html`,
      contentType: 'text/html; charset=utf-8',
    });
    expect(resolveAppAsset(root, 'capsem://app/')).toMatchObject({ path: `${root}/index.html` });
    expect(resolveAppAsset(root, 'capsem://app/assets/index-abc.js?v=1#x')).toEqual({
      kind: 'file',
      path: `${root}/assets/index-abc.js`,
      contentType: 'text/javascript; charset=utf-8',
    });
    expect(resolveAppAsset(root, 'capsem://app/assets/x.woff2')).toMatchObject({ contentType: 'font/woff2' });
    expect(resolveAppAsset(root, 'capsem://app/a%20b.css')).toMatchObject({ path: `${root}/a b.css` });
  });

  it('gives client-side routes the entry page', () => {
    expect(resolveAppAsset(root, 'capsem://app/sessions/3f2a9c1e')).toMatchObject({ path: `${root}/index.html` });
  });

  it.each([
    'capsem://app/assets/%2e%2e%2f%2e%2e%2fsecret.js',
    'capsem://app/..%2fsecret.js',
    'capsem://app/..%5csecret.js',
    'capsem://app/assets%5c..%5c..%5csecret.js',
    'capsem://app/x%00.js',
    'capsem://app/.env.json',
    'capsem://app/.git/config.txt',
  ])('refuses traversal: %s', (url) => {
    const asset = resolveAppAsset(root, url);
    expect(asset.kind).toBe('refused');
    if (asset.kind === 'file') expect(asset.path.startsWith(`${root}/`)).toBe(true);
  });

  it('keeps dot-segments the URL parser folds (literal or %2e) inside the root', () => {
    expect(resolveAppAsset(root, 'capsem://app/assets/../index.html')).toMatchObject({ kind: 'file', path: `${root}/index.html` });
    expect(resolveAppAsset(root, 'capsem://app/../../etc/passwd.txt')).toMatchObject({ kind: 'file', path: `${root}/etc/passwd.txt` });
    expect(resolveAppAsset(root, 'capsem://app/%2e%2e/%2e%2e/etc/passwd.txt')).toMatchObject({
      kind: 'file',
      path: `${root}/etc/passwd.txt`,
    });
  });

  it.each([
    ['capsem://session/index.html', 404],
    ['capsem://evil/index.html', 404],
    ['capsem://user@app/index.html', 404],
    ['capsem://app:8080/index.html', 404],
    ['file:///opt/capsem/dist/renderer/index.html', 404],
    ['https://app/index.html', 404],
    ['capsem://app/%E0%A4%A.js', 400],
    ['capsem://app/data.bin', 404],
  ])('refuses %s with %i', (url, status) => {
    expect(resolveAppAsset(root, url)).toMatchObject({ kind: 'refused', status });
  });
});

describe('isInsideRoot', () => {
  it('catches a symlink that leads out of the renderer folder', () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'capsem-proto-')));
    mkdirSync(join(dir, 'renderer'));
    writeFileSync(join(dir, 'secret.js'), 'x');
    writeFileSync(join(dir, 'renderer', 'ok.js'), 'x');
    symlinkSync(join(dir, 'secret.js'), join(dir, 'renderer', 'link.js'));
    const rootReal = join(dir, 'renderer');
    expect(isInsideRoot(rootReal, realpathSync(join(rootReal, 'ok.js')))).toBe(true);
    expect(isInsideRoot(rootReal, realpathSync(join(rootReal, 'link.js')))).toBe(false);
    expect(isInsideRoot(rootReal, rootReal)).toBe(false);
    expect(isInsideRoot(rootReal, `${rootReal}-sibling/x.js`)).toBe(false);
  });
});

describe('isAppUrl', () => {
  it('is our origin only', () => {
    expect(isAppUrl('capsem://app/index.html')).toBe(true);
    for (const url of [
      'capsem://session/x',
      'capsem://app.evil/',
      'capsem://u:p@app/',
      'capsem://app:1/',
      'https://app/',
      'file:///index.html',
      'about:blank',
      'devtools://devtools/',
      '',
    ])
      expect(isAppUrl(url), url).toBe(false);
  });
});

describe('content security policy', () => {
  it('allows scripts from our files only and blocks the rest', () => {
    const directives = new Map(CONTENT_SECURITY_POLICY.split('; ').map((d) => [d.split(' ')[0]!, d.split(' ').slice(1)]));
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('connect-src')).toEqual(["'self'"]);
    for (const d of ['object-src', 'frame-src', 'frame-ancestors', 'base-uri', 'form-action'])
      expect(directives.get(d), d).toEqual(["'none'"]);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-eval|\*|https?:/);
    expect(appResponseHeaders('text/html')).toMatchObject({
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
    });
  });
});

describe('permissionAllowed', () => {
  it('refuses everything but clipboard writes from our pages', () => {
    expect(permissionAllowed('clipboard-sanitized-write', 'capsem://app/index.html')).toBe(true);
    expect(permissionAllowed('clipboard-sanitized-write', 'capsem://app')).toBe(true);
    expect(permissionAllowed('clipboard-sanitized-write', 'https://evil.example/')).toBe(false);
    for (const p of [
      'clipboard-read',
      'media',
      'geolocation',
      'notifications',
      'openExternal',
      'hid',
      'usb',
      'serial',
      'fullscreen',
      'unknown',
    ])
      expect(permissionAllowed(p, 'capsem://app/'), p).toBe(false);
  });
});
