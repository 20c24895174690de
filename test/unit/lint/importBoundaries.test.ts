import { describe, expect, it } from 'vitest';
import { lintMessages } from '../../helpers/lintMessages.ts';

// The import direction is enforced by lint; these pin that the rule really fires.

describe('import boundaries', () => {
  it('refuses electron in the core', async () => {
    expect(await lintMessages("import { app } from 'electron';\nexport const a = app;\n", 'electron/store/leak.ts')).toEqual([
      expect.stringMatching(/Only electron\/shell\/ may import electron/),
    ]);
  });

  it('allows electron in the shell', async () => {
    expect(await lintMessages("import { app } from 'electron';\nexport const a = app;\n", 'electron/shell/main.ts')).toEqual([]);
  });

  it('refuses Node built-ins and better-sqlite3 in the renderer', async () => {
    for (const mod of ['node:fs', 'fs', 'child_process', 'better-sqlite3']) {
      const found = await lintMessages(`import x from '${mod}';\nexport const a = x;\n`, 'renderer/src/leak.ts');
      expect(found, mod).toEqual([expect.stringMatching(/renderer never touches Node/)]);
    }
  });

  it('lets the renderer import the contract, and only types from the rest of the core', async () => {
    expect(
      await lintMessages(
        "import { asSessionId } from '../../electron/contract/ids.ts';\nexport const a = asSessionId;\n",
        'renderer/src/ok.ts',
      ),
    ).toEqual([]);
    expect(
      await lintMessages(
        "import type { SessionRecord } from '../../electron/store/registry.ts';\nexport type A = SessionRecord;\n",
        'renderer/src/ok.ts',
      ),
    ).toEqual([]);
    expect(
      await lintMessages(
        "import { getSession } from '../../electron/store/registry.ts';\nexport const a = getSession;\n",
        'renderer/src/leak.ts',
      ),
    ).toEqual([expect.stringMatching(/only types from the rest of the core/)]);
  });

  it('refuses Node built-ins in the contract, which the renderer imports', async () => {
    for (const mod of ['node:crypto', 'crypto', 'node:path', 'better-sqlite3']) {
      const found = await lintMessages(`import x from '${mod}';\nexport const a = x;\n`, 'electron/contract/leak.ts');
      expect(found, mod).toEqual([expect.stringMatching(/contract never touches Node/)]);
    }
    expect(await lintMessages("import { app } from 'electron';\nexport const a = app;\n", 'electron/contract/leak.ts')).toEqual([
      expect.stringMatching(/Only electron\/shell\/ may import electron/),
    ]);
  });
});
