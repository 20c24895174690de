import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asSessionId } from '../../electron/contract/ids.ts';
import { ControlClient } from '../../electron/owner/controlClient.ts';
import { startControlServer, type ControlServer } from '../../electron/owner/controlSocket.ts';
import { vmHostMethods } from '../../electron/owner/vmHostMethods.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { capsemHome, ensurePrivateDir, sessionPaths } from '../../electron/store/paths.ts';
import { getSession } from '../../electron/store/registry.ts';
import { VmStreamEvent } from '../../electron/owner/vmMethods.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { freePort } from '../helpers/freePort.ts';
import { mountSmallDisk, smallDiskUnavailable, type SmallDisk } from '../helpers/smallDisk.ts';
import { tempHome } from '../helpers/tempHome.ts';

// `capsem run`'s path (the owner's vm.run, over the control socket) with the real guest agent run
// as a host process and CAPSEM_HOME on an 8 MiB disk that the guest's uploads fill. Once the writer
// fails, the VM is stopped in order and the run ends with exit code 74 and the reason; the session
// ends crashed with what was lost, and every request that reached the upstream is recorded or counted.

const missing = smallDiskUnavailable() ?? buildAgent();
const HOST = 'upload.test';
const REASON = 'cannot write session.db: database or disk is full';

describe.skipIf(missing !== null)(`capsem run on a disk that fills up${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let disk: SmallDisk;
  const work = mkdtempSync(join(tmpdir(), 'capsem-vm-disk-full-'));
  const upstreamHome = tempHome();
  let upstream: Server;
  const reached: string[] = [];
  let server: ControlServer;
  let host: VmHost;
  let exit: number | null;
  let stdout = '';
  const stderr: string[] = [];
  const status: string[] = [];
  let sessionId = '';

  beforeAll(async () => {
    disk = mountSmallDisk(8);
    const home = capsemHome({ CAPSEM_HOME: disk.dir });
    const ca = await CertificateAuthority.load(upstreamHome);
    const leaf = await ca.issueLeaf(HOST);
    writeFileSync(join(work, 'upstream-ca.pem'), ca.certPem);
    writeFileSync(join(work, 'body'), Buffer.alloc(256 << 10, 0x61));
    upstream = createServer({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem }, (req, res) => {
      reached.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.end('{"stored":true}'));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    host = new VmHost({
      home,
      backend: () => new HostAgentBackend(work),
      hostEnv: {
        ...process.env,
        CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${(upstream.address() as AddressInfo).port}`,
        CAPSEM_UPSTREAM_CA_FILE: join(work, 'upstream-ca.pem'),
      },
      plan: () => async (_paths, caPem) => hostAgentPlan(work, await freePort(), caPem),
    });
    ensurePrivateDir(home.runDir);
    server = await startControlServer({
      path: join(home.runDir, 'control.sock'),
      info: { pid: process.pid, kind: 'cli', command: 'test', startedAt: new Date().toISOString(), version: '0.0.0' },
      methods: vmHostMethods(host),
    });
    const client = await ControlClient.connect(server.path);
    const upload = `i=0; refused=0
      while [ $i -lt 120 ] && [ $refused -lt 3 ]; do
        i=$((i+1))
        code=$(curl -sS -o /dev/null -w '%{http_code}' --data-binary @${join(work, 'body')} https://${HOST}/put/$i 2>/dev/null)
        echo "$i $code"
        [ "$code" = 200 ] || refused=$((refused+1))
      done`;
    const stream = await client.stream(
      'vm.run',
      { image: 'minimal', argv: ['sh', '-c', upload] },
      {
        onData: (bytes) => {
          stdout += bytes.toString();
        },
        onEvent: (raw) => {
          const event = VmStreamEvent.parse(raw);
          if (event.type === 'stderr') stderr.push(Buffer.from(event.data, 'base64').toString());
          if (event.type === 'status') status.push(event.line);
          if (event.type === 'session') sessionId = event.id;
        },
      },
    );
    exit = await stream.exit;
    client.close();
  }, 120_000);

  afterAll(async () => {
    await host?.stopAll();
    await server?.close();
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
    disk?.unmount();
    upstreamHome.remove();
    rmSync(work, { recursive: true, force: true });
  });

  it('stops the VM in order and ends the run with exit code 74 and the reason', () => {
    expect(exit, stderr.join('')).toBe(74);
    expect(status).toContain(`stopping the VM: ${REASON}`);
    expect(stderr.join('')).toMatch(
      new RegExp(`capsem: session ${sessionId} crashed: ${REASON}; \\d+ exchanges? \\(\\d+ rows?\\) not recorded\\n`),
    );
    expect(host.live).toHaveLength(0);
  });

  it('records or counts every guest request that reached the upstream, and forwards none it refused', () => {
    const answered = stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .filter((parts) => parts.length === 2);
    const ok = answered.filter(([, code]) => code === '200').map(([i]) => `/put/${i}`);
    // The VM is stopped within moments of the failure, usually before the guest prints a refusal;
    // the refusals themselves are pinned in proxyRefusal.test.ts and recordDiskFull.test.ts.
    const refused = answered.filter(([, code]) => code !== '200').map(([i]) => `/put/${i}`);
    expect(ok.length).toBeGreaterThan(3);
    for (const path of ok) expect(reached).toContain(path);
    for (const path of refused) expect(reached).not.toContain(path);
    const db = new Database(sessionPaths(capsemHome({ CAPSEM_HOME: disk.dir }), asSessionId(sessionId)).dbPath, { readonly: true });
    const recorded = db.prepare("SELECT count(*) FROM net_events WHERE path LIKE '/put/%'").pluck().get() as number;
    const lost = Number(db.prepare("SELECT value FROM session_meta WHERE key = 'writer_lost_net_events'").pluck().get());
    db.close();
    expect(recorded).toBeGreaterThan(0);
    expect(reached.length).toBe(recorded + lost);
  });

  it('leaves the session crashed in main.db with the reason and the loss', () => {
    const db = openMainDb(capsemHome({ CAPSEM_HOME: disk.dir }));
    const record = getSession(db, asSessionId(sessionId));
    db.close();
    expect(record).toMatchObject({ status: 'crashed' });
    expect(record!.statusReason).toMatch(new RegExp(`^${REASON}; \\d+ exchanges? \\(\\d+ rows?\\) not recorded$`));
  });
});
