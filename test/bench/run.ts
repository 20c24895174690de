import { agentBench } from './agentBench.ts';
import { apiBench } from './apiBench.ts';
import { archiveBench } from './archiveBench.ts';
import { conversationViewBench } from './conversationViewBench.ts';
import { keyScrubBench } from './keyScrubBench.ts';
import { proxyBench } from './proxyBench.ts';
import { storeBench } from './storeBench.ts';
import { storyBench } from './storyBench.ts';
import { timelineViewBench } from './timelineViewBench.ts';
import { vmBench } from './vmBench.ts';
import { vmDownloadBench } from './vmDownloadBench.ts';

// `npm run bench` runs every benchmark; `npm run bench -- store` runs one. Each prints its
// figures against a baseline measured in the same run and exits 1 when a target is missed.
const BENCHES: Record<string, () => Promise<boolean>> = {
  store: storeBench,
  api: apiBench,
  proxy: proxyBench,
  vm: vmBench,
  'vm-download': vmDownloadBench,
  archive: archiveBench,
  agent: agentBench,
  keys: keyScrubBench,
  story: storyBench,
  'story-conversation': conversationViewBench,
  // The Timeline view's figures alone, until the story benchmark runs them with its own session.
  'story-timeline': timelineViewBench,
};

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in BENCHES));
if (unknown.length > 0) {
  console.error(`capsem bench: unknown benchmark ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
let ok = true;
// vm-download is the download part of vm, there to be asked for alone.
const everyBench = Object.keys(BENCHES).filter((name) => name !== 'vm-download');
for (const name of asked.length > 0 ? asked : everyBench) ok = (await BENCHES[name]!()) && ok;
process.exitCode = ok ? 0 : 1;
