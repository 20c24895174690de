import { setTimeout as sleep } from 'node:timers/promises';
import { capsemHome } from '../../electron/store/paths.ts';
import { ensureImage } from '../../electron/vm/image/guestImage.ts';
import { acquireBuildLock } from '../../electron/vm/image/imageBuildLock.ts';

// A second process for the image cache's lock tests, against CAPSEM_IMAGE_CACHE from the environment.
// `ensure <home> <agent>`: ensureImage('minimal'), one JSON line per progress report, then {dir}.
// `hold <cacheDir>`: takes the minimal image's build lock, publishes one progress report, prints
// "locked" and waits to be killed.

const [mode, arg, agentBinary] = process.argv.slice(2);
if (mode === 'ensure') {
  const image = await ensureImage(capsemHome({ CAPSEM_HOME: arg }), 'minimal', {
    agentBinary: agentBinary!,
    onProgress: (p) => console.log(JSON.stringify({ stage: p.stage, message: p.message, fraction: p.fraction })),
  });
  console.log(JSON.stringify({ dir: image.dir }));
} else if (mode === 'hold') {
  const taken = await acquireBuildLock(arg!, 'minimal');
  if (!taken.acquired) throw new Error(`the lock is held by pid ${taken.holder.pid}`);
  taken.lock.progress({
    stage: 'initramfs',
    message: 'packing busybox',
    fraction: 0.4,
    stageFraction: 0.5,
    build: [{ stage: 'initramfs', state: 'running', fraction: 0.5, ms: 100 }],
  });
  console.log('locked');
  await sleep(600_000);
} else {
  throw new Error(`unknown mode ${mode}`);
}
