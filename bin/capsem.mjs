#!/usr/bin/env node
// The CLI runs under plain Node. From a source checkout the TypeScript is loaded through tsx;
// a packaged build ships compiled JavaScript beside this file instead.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = new URL('../dist/electron/cli/main.js', import.meta.url);
if (existsSync(compiled)) {
  await (await import(compiled.href)).main();
} else {
  const { register } = await import('tsx/esm/api');
  // Our own tsconfig, not the one in the folder capsem is run from: a user's project tsconfig
  // (its paths, baseUrl or extends) would otherwise decide how capsem's own imports resolve.
  register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
  await (await import(new URL('../electron/cli/main.ts', import.meta.url).href)).main();
}
