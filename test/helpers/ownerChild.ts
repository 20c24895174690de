// A separate process for owner tests: `lock` takes the lock and waits to be signalled;
// `exit` takes it and ends without releasing; `race` says "ready", waits for the file <root>/go so
// that racers start together, then runs withOwnership and says which side it got.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { acquireOwnerLock } from '../../electron/owner/ownerLock.ts';
import { withOwnership } from '../../electron/owner/ownership.ts';
import { capsemHome } from '../../electron/store/paths.ts';

const [root, mode, holdMs] = process.argv.slice(2);
const home = capsemHome({ CAPSEM_HOME: root });
const who = { kind: 'cli', command: `ownerChild ${mode}` } as const;

if (mode === 'lock' || mode === 'exit') {
  const taken = await acquireOwnerLock(home, who);
  process.stdout.write(`${JSON.stringify({ acquired: taken.acquired })}\n`);
  if (mode === 'lock') setInterval(() => undefined, 60_000);
} else if (mode === 'race') {
  process.stdout.write('ready\n');
  while (!existsSync(join(root!, 'go'))) await new Promise((resolve) => setTimeout(resolve, 5));
  const side = await withOwnership(
    home,
    who,
    async () => {
      await new Promise((resolve) => setTimeout(resolve, Number(holdMs)));
      return 'owner';
    },
    async (_client, info) => `client of ${info.pid}`,
    { onNote: (text) => process.stderr.write(`${text}\n`) },
  );
  process.stdout.write(`${side}\n`);
}
