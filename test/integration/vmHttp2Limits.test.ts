import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { expectFloodsRefused, floodAnswers, floodScript, HTTP2_FLOOD } from '../helpers/http2Floods.ts';
import { watchRss } from '../helpers/rssWatch.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { agentImageUnavailable, guestRun, sharedAgentVm } from '../helpers/vmTestHome.ts';

// Inside a real VM (agent image), an HTTP/2 client that keeps to none of the proxy's limits, on
// the guest's Node: 5,000 requests opened at once on one connection, and a header list of 8 MiB
// sent as CONTINUATION frames and as references into HPACK's dynamic table. Each is refused and
// recorded, the host process that holds the proxy stays within a bound, and the next connection
// is served.

const noAgentImage = agentImageUnavailable();
const FLOOD_HOST = 'flood.h2.example';

describe.skipIf(noAgentImage !== null)(
  `real VM, agent image: an HTTP/2 client past the limits${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const vm = sharedAgentVm([FLOOD_HOST]);

    it("is refused (5,000 streams at once, 8 MiB header lists by CONTINUATION and by HPACK's table), each refusal recorded, the proxy's memory bounded, and the next connection served", async () => {
      copyFileSync(HTTP2_FLOOD, join(vm.session.paths.workspaceDir, 'http2Flood.mjs'));
      copyFileSync(
        fileURLToPath(new URL('../fixtures/proxyTunnel.mjs', import.meta.url)),
        join(vm.session.paths.workspaceDir, 'proxyTunnel.mjs'),
      );
      // This process holds the session's proxy (QEMU is a process of its own).
      const watch = watchRss(() => process.memoryUsage().rss);
      const r = await guestRun(vm.session, ['sh', '-c', floodScript('node', 'http2Flood.mjs', `${FLOOD_HOST}:443`)], { cwd: '/workspace' });
      const grewMiB = watch.stop();
      expect(r.code, r.err).toBe(0);
      await vm.session.recording.flush();
      const rows = <T>(sql: string): T[] => sessionRows<T>(vm.session.paths.dbPath, sql);
      expectFloodsRefused(
        floodAnswers(r.out),
        rows<{ error_message: string }>("SELECT error_message FROM net_events WHERE matched_rule = 'proxy.http2-limits' ORDER BY seq").map(
          (row) => row.error_message,
        ),
        vm.upstream.requests.map((q) => q.path),
      );
      expect(rows("SELECT DISTINCT domain, decision, process_name FROM net_events WHERE matched_rule = 'proxy.http2-limits'")).toEqual([
        { domain: FLOOD_HOST, decision: 'denied', process_name: 'node' },
      ]);
      expect(grewMiB, `the proxy's process grew ${grewMiB.toFixed(1)} MiB under the floods`).toBeLessThan(64);
    }, 300_000);
  },
);
