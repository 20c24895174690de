import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eslint, lintMessages } from '../../helpers/lintMessages.ts';

// The directions between electron/'s folders are a lint rule: these pin that it fires, that the
// directions it allows pass, and that no folder is left out of it.

describe('folder directions', () => {
  it('refuses an import against the direction, naming what the folder may import', async () => {
    expect(await lintMessages("import { VmHost } from '../vm/vmHost.ts';\nexport const a = VmHost;\n", 'electron/store/leak.ts')).toEqual([
      expect.stringContaining('electron/store/ imports only telemetry/, platform/, contract/ (the folder directions in eslint.config.js).'),
    ]);
    expect(
      await lintMessages(
        "import { MethodError } from '../owner/controlSocket.ts';\nexport const a = MethodError;\n",
        'electron/vm/leak.ts',
      ),
    ).toEqual([expect.stringMatching(/electron\/vm\/ imports only recording\//)]);
    expect(
      await lintMessages(
        "import type { ProgressReport } from '../../cli/progressLine.ts';\nexport type A = ProgressReport;\n",
        'electron/vm/image/leak.ts',
      ),
    ).toEqual([expect.stringMatching(/electron\/vm\/ imports only/)]);
    expect(
      await lintMessages(
        "import { asSessionId } from '../sessions/sessionStores.ts';\nexport const a = asSessionId;\n",
        'electron/contract/leak.ts',
      ),
    ).toEqual([expect.stringContaining('electron/contract/ imports no other folder (the folder directions in eslint.config.js).')]);
  });

  it('lets a folder import the folders below it', async () => {
    expect(
      await lintMessages("import { openMainDb } from '../../store/mainDb.ts';\nexport const a = openMainDb;\n", 'electron/vm/image/ok.ts'),
    ).toEqual([]);
    expect(
      await lintMessages("import { hostVms } from '../owner/vmHosting.ts';\nexport const a = hostVms;\n", 'electron/cli/ok.ts'),
    ).toEqual([]);
  });

  it('lets every folder but contract/ import platform/, which imports no other folder', async () => {
    expect(
      await lintMessages(
        "import { capsemVersion } from '../platform/capsemVersion.ts';\nexport const a = capsemVersion;\n",
        'electron/archive/ok.ts',
      ),
    ).toEqual([]);
    expect(
      await lintMessages(
        "import { processStartTicks } from '../platform/processIdentity.ts';\nexport const a = processStartTicks;\n",
        'electron/store/ok.ts',
      ),
    ).toEqual([]);
    expect(
      await lintMessages("import { findOwner } from '../owner/ownership.ts';\nexport const a = findOwner;\n", 'electron/archive/leak.ts'),
    ).toEqual([expect.stringMatching(/electron\/archive\/ imports only/)]);
    expect(
      await lintMessages("import { openMainDb } from '../store/mainDb.ts';\nexport const a = openMainDb;\n", 'electron/platform/leak.ts'),
    ).toEqual([expect.stringContaining('electron/platform/ imports no other folder')]);
    expect(
      await lintMessages(
        "import { capsemVersion } from '../platform/capsemVersion.ts';\nexport const a = capsemVersion;\n",
        'electron/contract/leak.ts',
      ),
    ).toEqual([expect.stringContaining('electron/contract/ imports no other folder')]);
  });

  it('states a direction for every folder of the core', async () => {
    const folders = readdirSync('electron', { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'shell')
      .map((d) => d.name);
    for (const folder of folders) {
      const config = (await eslint.calculateConfigForFile(`electron/${folder}/any.ts`)) as {
        rules: Record<string, [unknown, { patterns: { message: string }[] }]>;
      };
      const [, options] = config.rules['no-restricted-imports']!;
      expect(
        options.patterns.map((p) => p.message),
        folder,
      ).toContainEqual(expect.stringContaining(`electron/${folder}/ imports`));
    }
  });
});
