import { agentBench } from './agentBench.ts';
import { apiBench } from './apiBench.ts';
import { archiveBench } from './archiveBench.ts';
import { changesBench } from './changesBench.ts';
import { conversationViewBench } from './conversationViewBench.ts';
import { keyScrubBench } from './keyScrubBench.ts';
import { otelBench } from './otelBench.ts';
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
  changes: changesBench,
  otel: otelBench,
  story: async () => [await storyBench(), await conversationViewBench(), await timelineViewBench()].every(Boolean),
  // Parts of story, to be asked for alone.
  'story-route': storyBench,
  'story-conversation': conversationViewBench,
  'story-timeline': timelineViewBench,
};

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in BENCHES));
if (unknown.length > 0) {
  console.error(`capsem bench: unknown benchmark ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
let ok = true;
// vm-download and the story parts are parts of vm and story, there to be asked for alone.
const PARTS = new Set(['vm-download', 'story-route', 'story-conversation', 'story-timeline']);
const everyBench = Object.keys(BENCHES).filter((name) => !PARTS.has(name));
for (const name of asked.length > 0 ? asked : everyBench) ok = (await BENCHES[name]!()) && ok;
process.exitCode = ok ? 0 : 1;
