import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { mountSmallDisk, smallDiskUnavailable, type SmallDisk } from '../helpers/smallDisk.ts';
import { tempHome } from '../helpers/tempHome.ts';

// `capsem record` with CAPSEM_HOME on a real 8 MiB disk that a program fills with 256 KiB uploads.
// The guarantee: once the writer has failed to commit, every new request is refused (507) before
// it reaches the upstream; the requests answered before that moment are either in session.db or
// counted as lost in its marker, never silently missing; capsem stops the program and exits 74.

const missing = smallDiskUnavailable();
const HOST = 'upload.test';
const REASON = 'cannot write session.db: database or disk is full';

type Line = { i: number; status?: number; body?: string; error?: string } | { signal: string } | { pid: number };

describe.skipIf(missing !== null)(`capsem record on a disk that fills up${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let disk: SmallDisk;
  const work = mkdtempSync(join(tmpdir(), 'capsem-disk-full-'));
  const upstreamHome = tempHome();
  let upstream: Server;
  const reached: string[] = [];
  let result: CliResult;
  let lines: Line[];

  beforeAll(async () => {
    disk = mountSmallDisk(8);
    const ca = await CertificateAuthority.load(upstreamHome);
    const leaf = await ca.issueLeaf(HOST);
    writeFileSync(join(work, 'upstream-ca.pem'), ca.certPem);
    upstream = createServer({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem }, (req, res) => {
      // Counted on arrival, before the body: a request cut short still reached the upstream.
      reached.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.end('{"stored":true}'));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const client = join(work, 'uploader.mjs');
    writeFileSync(
      client,
      `
      import { appendFileSync } from 'node:fs';
      const results = process.argv[2];
      const note = (line) => appendFileSync(results, JSON.stringify(line) + '\\n');
      note({ pid: process.pid });
      // Told to stop, this program carries on: capsem must not wait for it forever.
      process.on('SIGTERM', () => note({ signal: 'SIGTERM' }));
      const body = Buffer.alloc(256 << 10, 0x61);
      let refused = 0;
      for (let i = 1; i <= 120 && refused < 3; i++) {
        try {
          const res = await fetch('https://${HOST}/put/' + i, { method: 'POST', body });
          note({ i, status: res.status, body: await res.text() });
          if (res.status !== 200) refused += 1;
        } catch (err) {
          note({ i, error: String(err.cause?.message ?? err.message) });
          refused += 1;
        }
      }
      setInterval(() => {}, 1000);
    `,
    );
    result = await runCapsemAsync(
      disk.dir,
      ['record', '--name', 'fills-up', '--', process.execPath, client, join(work, 'results.jsonl')],
      {
        CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${(upstream.address() as AddressInfo).port}`,
        CAPSEM_UPSTREAM_CA_FILE: join(work, 'upstream-ca.pem'),
      },
      { timeoutMs: 60_000 },
    );
    lines = readFileSync(join(work, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
  }, 90_000);

  afterAll(async () => {
    // The uploader ignores SIGTERM: if capsem failed to kill it, this test does.
    const started = /^\{"pid":(\d+)\}$/m.exec(
      existsSync(join(work, 'results.jsonl')) ? readFileSync(join(work, 'results.jsonl'), 'utf8') : '',
    );
    try {
      if (started) process.kill(Number(started[1]), 'SIGKILL');
    } catch {
      // already gone, as it should be
    }
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
    disk?.unmount();
    upstreamHome.remove();
    rmSync(work, { recursive: true, force: true });
  });

  const requests = (): { i: number; status?: number; body?: string; error?: string }[] =>
    lines.filter((l): l is Extract<Line, { i: number }> => 'i' in l);
  const sessionDb = (): Database.Database => {
    const [session] = JSON.parse(runCapsem(disk.dir, ['list', '--json']).stdout) as { id: string }[];
    return new Database(join(disk.dir, 'run', 'sessions', session!.id, 'session.db'), { readonly: true });
  };

  it('stops the program (SIGTERM, then SIGKILL) and exits 74 with the reason and the loss', () => {
    expect(result.code, result.stderr).toBe(74);
    expect(result.stderr).toContain(`capsem record: stopping ${process.execPath.split('/').pop()}: ${REASON}`);
    expect(lines).toContainEqual({ signal: 'SIGTERM' });
    expect(result.stderr).toMatch(/did not stop within 5 s of SIGTERM; killed it/);
    expect(result.stderr).toMatch(
      new RegExp(`session [0-9a-f-]+ \\(fills-up\\) crashed: ${REASON}; \\d+ exchanges? \\(\\d+ rows?\\) not recorded`),
    );
  });

  it('refuses every request after the failure with 507 and the reason, and none of them reaches the upstream', () => {
    const ok = requests().filter((r) => r.status === 200);
    const refused = requests().filter((r) => r.status !== 200);
    expect(ok.length).toBeGreaterThan(3);
    expect(refused.length).toBeGreaterThan(0);
    // Sequential requests: once one is refused, no later one is answered.
    expect(Math.max(...ok.map((r) => r.i))).toBeLessThan(Math.min(...refused.map((r) => r.i)));
    expect(refused[0]).toMatchObject({ status: 507, body: `capsem: this session cannot be recorded: ${REASON}; request refused\n` });
    // Later ones come as a 507 in the tunnel, or as a refused tunnel (fetch reports only an error).
    for (const r of refused.slice(1)) expect(r.status === 507 || r.error !== undefined, JSON.stringify(r)).toBe(true);
    for (const r of refused) expect(reached).not.toContain(`/put/${r.i}`);
    for (const r of ok) expect(reached).toContain(`/put/${r.i}`);
  });

  it('records every exchange that reached the upstream, or counts it as lost in the session', () => {
    const db = sessionDb();
    const recorded = db.prepare("SELECT path FROM net_events WHERE domain = ? AND path LIKE '/put/%'").pluck().all(HOST) as string[];
    const meta = Object.fromEntries(
      (db.prepare('SELECT key, value FROM session_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
    db.close();
    expect(recorded.length).toBeGreaterThan(0);
    expect(meta.writer_unwritable).toBe(REASON);
    const lostExchanges = Number(meta.writer_lost_net_events);
    expect(Number(meta.writer_lost)).toBeGreaterThanOrEqual(lostExchanges);
    expect(new Set(recorded).size).toBe(recorded.length);
    for (const path of recorded) expect(reached).toContain(path);
    expect(reached.length).toBe(recorded.length + lostExchanges);
  });

  it('ends the session crashed in capsem list, naming the failure and the loss', () => {
    const [session] = JSON.parse(runCapsem(disk.dir, ['list', '--json']).stdout) as {
      name: string;
      status: string;
      statusReason: string;
    }[];
    expect(session).toMatchObject({ name: 'fills-up', status: 'crashed' });
    expect(session!.statusReason).toMatch(new RegExp(`^${REASON}; \\d+ exchanges? \\(\\d+ rows?\\) not recorded$`));
  });

  it('has capsem check report the loss, on the full disk and after space is freed', () => {
    for (const freed of [false, true]) {
      if (freed) disk.resize(64);
      const check = runCapsem(disk.dir, ['check', 'fills-up']);
      expect(check.code, check.stderr).toBe(1);
      expect(check.stdout).toMatch(new RegExp(`FINDING \\[disk failure\\] ${REASON}; \\d+ exchanges? \\(\\d+ rows?\\) not recorded`));
      expect(check.stdout).not.toMatch(/FINDING \[integrity\]/);
    }
  });
});
