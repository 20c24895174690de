import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DebugLogger } from 'builder-util/out/DebugLogger.js';
import { getConfig, validateConfiguration } from 'app-builder-lib/out/util/config/config.js';

// `npm run dist` cannot run here (electron-builder downloads Electron from GitHub), so the config
// is checked the way electron-builder itself checks it before a build: loaded by its loader and
// validated against its JSON schema (app-builder-lib/scheme.json), offline.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const configPath = `${root}build/electron-builder.yml`;

describe('build/electron-builder.yml', () => {
  it("passes electron-builder's own schema validation", async () => {
    const config = await getConfig(root, configPath, null);
    await expect(validateConfiguration(config, new DebugLogger(false))).resolves.toBeUndefined();
  });

  it('is really validated: a misspelt fuse is refused', async () => {
    const config = await getConfig(root, configPath, null);
    const misspelt = { ...config, electronFuses: { ...config.electronFuses, runAsnode: false } };
    await expect(validateConfiguration(misspelt, new DebugLogger(false))).rejects.toThrow(/does not match the API schema/);
  });

  it('sets the fuses that close the Node back doors', async () => {
    const config = await getConfig(root, configPath, null);
    expect(config.electronFuses).toEqual({
      runAsNode: false,
      enableCookieEncryption: true,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      enableEmbeddedAsarIntegrityValidation: true,
      onlyLoadAppFromAsar: true,
      grantFileProtocolExtraPrivileges: false,
    });
  });

  it('ships the guest recipe, the agent and resources as real files, and targets Linux and macOS', async () => {
    const config = await getConfig(root, configPath, null);
    expect(config.extraResources).toEqual([
      { from: 'build/guest', to: 'build/guest' },
      { from: 'native/agent/build/capsem-agent', to: 'native/agent/build/capsem-agent' },
      { from: 'resources', to: 'resources' },
    ]);
    expect(config.asarUnpack).toContain('node_modules/better-sqlite3/**');
    expect(config.linux?.target).toEqual(['AppImage', 'deb']);
    expect(config.mac?.target).toEqual(['dmg']);
    expect(config.deb?.depends).toContain('qemu-system-x86');
    expect(config.productName).toBe('Capsem');
  });

  it('points package.json main at the shell bundle', () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { main: string; scripts: Record<string, string> };
    expect(pkg.main).toBe('dist/shell/main.cjs');
    expect(pkg.scripts['build:shell']).toBeDefined();
    expect(pkg.scripts.dist).toMatch(/electron-builder --config build\/electron-builder\.yml/);
  });

  it('has a 512x512 RGBA PNG icon', () => {
    const png = readFileSync(`${root}build/icon.png`);
    expect(png.subarray(1, 4).toString('ascii')).toBe('PNG');
    expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
    expect([png.readUInt32BE(16), png.readUInt32BE(20), png[25]]).toEqual([512, 512, 6]);
  });
});
