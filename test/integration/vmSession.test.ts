import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_SCROLLBACK_LINES } from '../../electron/contract/appContract.ts';
import { ContentStore } from '../../electron/changes/contentStore.ts';
import { Conversations } from '../../electron/sessions/conversation.ts';
import { revertSession } from '../../electron/sessions/sessionRevert.ts';
import { SessionStores } from '../../electron/sessions/sessionStores.ts';
import { WorkspaceChanges } from '../../electron/sessions/workspaceChanges.ts';
import { asSessionId } from '../../electron/contract/ids.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { getSession, renameSession } from '../../electron/store/registry.ts';
import { resolveSession } from '../../electron/store/resolver.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { readTranscriptChunk } from '../../electron/vm/ptyTranscript.ts';
import { VmSession, type VmSessionOptions } from '../../electron/vm/vmSession.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { freePort } from '../helpers/freePort.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The supervisor with the real guest agent, run as a host process (no VM): exec, the terminal,
// connections handed to the recording proxy with their process, file events, crash and stop.
// The same paths in a real VM are in vmBoot.test.ts.

const missing = buildAgent();
const home = tempHome();
const HOST = 'api.upstream.test';
let upstream: Server;
let upstreamCaFile: string;
let upPort = 0;

async function start(
  name: string | null = null,
  extra: Partial<VmSessionOptions> = {},
  guestEnv: Record<string, string> = {},
): Promise<{ session: VmSession; backend: HostAgentBackend }> {
  const workspace = extra.projectFolder ?? join(home.root, `ws-${Math.random().toString(36).slice(2)}`);
  mkdirSync(workspace, { recursive: true });
  const backend = new HostAgentBackend(workspace);
  const proxyPort = await freePort();
  const options: VmSessionOptions = {
    home,
    name,
    command: ['test'],
    backend,
    hostEnv: { ...process.env, CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upPort}`, CAPSEM_UPSTREAM_CA_FILE: upstreamCaFile },
    heartbeatMs: 200,
    plan: async (_paths, caPem) => hostAgentPlan(workspace, proxyPort, caPem, guestEnv),
    // The agent watches the folder the host reads each change's content from, as in a VM.
    projectFolder: workspace,
    ...extra,
  };
  return { session: await VmSession.start(options), backend };
}

/** Waits for `done` to hold, failing after `timeoutMs`. */
async function until(done: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not done within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function rows<T>(session: VmSession, sql: string): T[] {
  const db = new Database(session.paths.dbPath, { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

async function output(session: VmSession, argv: string[]): Promise<{ out: string; err: string; code: number | null }> {
  const { stream, result } = session.exec(argv);
  let out = '';
  let err = '';
  stream.on('data', (c: Buffer) => (out += c.toString()));
  stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const r = await result;
  return { out, err, code: r.code };
}

describe.skipIf(missing !== null)(`VM session supervisor with the real agent${missing ? ` (skipped: ${missing})` : ''}`, () => {
  beforeAll(async () => {
    const upHome = tempHome();
    const ca = await CertificateAuthority.load(upHome);
    const leaf = await ca.issueLeaf(HOST);
    upstreamCaFile = join(home.root, 'upstream-ca.pem');
    writeFileSync(upstreamCaFile, ca.certPem);
    upstream = createHttpsServer({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hello: req.url }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upPort = (upstream.address() as AddressInfo).port;
    writeFileSync(
      join(home.root, 'policy.json'),
      JSON.stringify({
        version: 1,
        rules: [
          { id: 'test.deny-blocked', action: 'deny', domains: ['blocked.test'] },
          { id: 'test.allow', action: 'allow', domains: ['*'] },
        ],
        privateAddresses: 'deny',
      }),
    );
  });
  afterAll(() => {
    upstream?.close();
    home.remove();
  });

  it('runs a command: its output, its exit code, and an exec_events row', async () => {
    const { session } = await start();
    const r = await output(session, ['sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(r).toEqual({ out: 'out\n', err: 'err\n', code: 7 });
    await session.stop();
    const [row] = rows<{ argv: string; exit_code: number; stdout_preview: string; stderr_bytes: number }>(
      session,
      'SELECT * FROM exec_events',
    );
    expect(row).toMatchObject({
      argv: JSON.stringify(['sh', '-c', 'echo out; echo err >&2; exit 7']),
      exit_code: 7,
      stdout_preview: 'out\n',
      stderr_bytes: 4,
    });
  });

  it('carries a guest curl through the recording proxy, tagged with its process, and refuses a denied domain', async () => {
    const { session } = await start();
    const ok = await output(session, ['curl', '-sS', `https://${HOST}/v1/ping`]);
    expect(ok.out).toBe(JSON.stringify({ hello: '/v1/ping' }));
    const denied = await output(session, ['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', 'https://blocked.test/x']);
    expect(denied.out).toBe('403');
    await session.stop();
    const net = rows<{ domain: string; process_name: string; pid: number; status_code: number; decision: string; matched_rule: string }>(
      session,
      'SELECT domain, process_name, pid, status_code, decision, matched_rule FROM net_events ORDER BY seq',
    );
    expect(net).toEqual([
      expect.objectContaining({ domain: HOST, process_name: 'curl', status_code: 200, decision: 'allowed' }),
      expect.objectContaining({
        domain: 'blocked.test',
        process_name: 'curl',
        status_code: 403,
        decision: 'denied',
        matched_rule: 'test.deny-blocked',
      }),
    ]);
    expect(net[0]!.pid).toBeGreaterThan(1);
  });

  it('records workspace changes as fs_events: created, modified, deleted', async () => {
    const { session } = await start();
    const settle = () => new Promise((r) => setTimeout(r, 400));
    await output(session, ['sh', '-c', 'mkdir -p src && printf hello > src/a.txt']);
    await settle();
    await output(session, ['sh', '-c', 'printf more >> src/a.txt']);
    await settle();
    await output(session, ['rm', 'src/a.txt']);
    await settle();
    await session.stop();
    const events = rows<{ action: string; path: string; size: number | null }>(
      session,
      "SELECT action, path, size FROM fs_events WHERE path = 'src/a.txt' ORDER BY seq",
    );
    expect(events).toEqual([
      { action: 'created', path: 'src/a.txt', size: 5 },
      { action: 'modified', path: 'src/a.txt', size: 9 },
      { action: 'deleted', path: 'src/a.txt', size: null },
    ]);
  });

  it('records the workspace before the guest gets it, and each change with its content before and after', async () => {
    const workspace = join(home.root, `ws-${Math.random().toString(36).slice(2)}`);
    mkdirSync(join(workspace, 'src'), { recursive: true });
    writeFileSync(join(workspace, 'src', 'a.txt'), 'before\n');
    writeFileSync(join(workspace, '.gitignore'), 'tmp/\n');
    mkdirSync(join(workspace, 'tmp'));
    writeFileSync(join(workspace, 'tmp', 'scratch'), 'ignored');
    const lines: string[] = [];
    const { session } = await start(null, { projectFolder: workspace, onStatus: (line) => lines.push(line) });
    await output(session, ['sh', '-c', 'printf after > src/a.txt']);
    await until(() => rows(session, "SELECT 1 FROM fs_events WHERE path = 'src/a.txt' AND after_hash IS NOT NULL").length > 0);
    await session.stop();
    expect(rows(session, 'SELECT path, size FROM workspace_files ORDER BY path')).toEqual([
      { path: '.gitignore', size: 5 },
      { path: 'src/a.txt', size: 7 },
    ]);
    const [meta] = rows<{ value: string }>(session, "SELECT value FROM session_meta WHERE key = 'workspace_baseline'");
    expect(JSON.parse(meta!.value)).toMatchObject({ files: 2, bytes: 12, skipped: 1 });
    expect(lines.some((line) => /^recorded the workspace: 2 files in [\d.]+ s$/.test(line))).toBe(true);
    const [row] = rows<{ action: string; before_hash: string; after_hash: string }>(
      session,
      "SELECT action, before_hash, after_hash FROM fs_events WHERE path = 'src/a.txt' ORDER BY seq",
    );
    const store = ContentStore.open(home);
    try {
      expect(row!.action).toBe('modified');
      expect(store.get(row!.before_hash)?.toString()).toBe('before\n');
      expect(store.get(row!.after_hash)?.toString()).toBe('after');
    } finally {
      store.close();
    }
  });

  it('reverts a change while the session runs: the file is back, the write is a restored row, and the next change starts from it', async () => {
    const workspace = join(home.root, `ws-${Math.random().toString(36).slice(2)}`);
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, 'a.txt'), 'one\n');
    const { session } = await start(null, { projectFolder: workspace });
    await output(session, ['sh', '-c', 'printf "two\\n" > a.txt']);
    await until(() => rows(session, "SELECT 1 FROM fs_events WHERE path = 'a.txt' AND after_hash IS NOT NULL").length > 0);
    const store = ContentStore.open(home);
    const stores = new SessionStores(home);
    try {
      const changes = new WorkspaceChanges(new Conversations());
      const input = { home, id: session.id, session: stores.get(session.id), changes, store };
      const [edit] = changes.page(input.session, false, store, { offset: 0, limit: 10, turn: null, path: 'a.txt' }).changes;
      // Another process cannot revert it: only the recording's own can record the write in order.
      await expect(revertSession({ ...input, ended: false }, { kind: 'change', seq: edit!.seq })).rejects.toThrow(/another Capsem process/);
      const result = await revertSession({ ...input, ended: false, live: session }, { kind: 'change', seq: edit!.seq });
      expect(result).toEqual({ restored: [{ path: 'a.txt', action: 'restored' }], refused: [] });
      expect(readFileSync(join(workspace, 'a.txt'), 'utf8')).toBe('one\n');
      await output(session, ['sh', '-c', 'printf "three\\n" > a.txt']);
      await until(() => rows(session, "SELECT 1 FROM fs_events WHERE path = 'a.txt' AND after_hash IS NOT NULL").length >= 3);
      await session.stop();
      const recorded = rows<{ action: string; before_hash: string | null; after_hash: string | null }>(
        session,
        "SELECT action, before_hash, after_hash FROM fs_events WHERE path = 'a.txt' ORDER BY seq",
      );
      const text = (hash: string | null) => (hash === null ? null : store.get(hash)?.toString());
      const shown = recorded.map((r) => [r.action, text(r.before_hash), text(r.after_hash)]);
      expect(shown[0]).toEqual(['modified', 'one\n', 'two\n']);
      expect(shown[1]).toEqual(['restored', 'two\n', 'one\n']);
      // The guest's next change starts from what the revert wrote (a guest that saw the host's write reports it as no change).
      expect(shown.at(-1)).toEqual(['modified', 'one\n', 'three\n']);
    } finally {
      stores.close();
      store.close();
    }
  });

  it('gives a terminal that echoes input and follows a resize, and keeps a transcript for replay', async () => {
    const { session } = await start();
    const pty = session.attachPty({ cols: 100, rows: 30 });
    let seen = '';
    pty.stream.on('data', (c: Buffer) => (seen += c.toString()));
    const waitFor = async (text: string) => {
      const until = Date.now() + 5000;
      while (!seen.includes(text) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toContain(text);
    };
    pty.stream.write('echo hi-$((6*7))\n');
    await waitFor('hi-42');
    pty.resize(132, 43);
    pty.stream.write('stty size\n');
    await waitFor('43 132');
    await session.stop();
    const { header, events } = await readTranscriptChunk(session.paths.ptyLogPath, 0, Infinity);
    expect(header).toMatchObject({ version: 2, width: 100, height: 30 });
    expect(events.some(([, code, data]) => code === 'o' && data.includes('hi-42'))).toBe(true);
    expect(events).toContainEqual([expect.any(Number), 'r', '132x43']);
  });

  it('shows a terminal attached again the screen the shell drew, then its new output', async () => {
    const { session } = await start();
    const first = session.attachPty({ cols: 80, rows: 24 });
    expect(await first.screen).toBe('');
    let seen = '';
    first.stream.on('data', (c: Buffer) => (seen += c.toString()));
    first.stream.write('echo "kept-$((6*7))"; printf "\\033[31mred\\033[0m\\n"\n');
    await until(() => seen.includes('kept-42') && seen.includes('red'));
    const firstEnded = new Promise<void>((resolve) => first.stream.once('end', () => resolve()));

    const second = session.attachPty({ cols: 80, rows: 24 });
    await firstEnded;
    const screen = await second.screen;
    // What was drawn, colours included, as escape sequences a terminal replays.
    expect(screen).toContain('kept-42');
    expect(screen).toContain('\x1b[31mred');
    let after = '';
    second.stream.on('data', (c: Buffer) => (after += c.toString()));
    second.stream.write('echo "then-$((6*8))"\n');
    await until(() => after.includes('then-48'));
    expect(after).not.toContain('kept-42');
    await session.stop();
  });

  it.each([
    ['whose viewer went first (the window reopened, capsem shell run again)', true],
    ['that another viewer took over', false],
  ])(
    'shows a terminal attached again in the middle of a flood %s every line once, in order: the screen, then what follows',
    async (_, viewerWent) => {
      const { session } = await start();
      const first = session.attachPty({ cols: 80, rows: 24 });
      const total = 20_000;
      const pad = 'x'.repeat(60);
      let read = 0;
      first.stream.on('data', (c: Buffer) => {
        // A viewer behind on its drawing: the rest of the flood is in flight on the host or held in the guest.
        if ((read += c.length) > 16_384) first.stream.pause();
      });
      first.stream.write(`i=0; while [ $i -lt ${total} ]; do printf 'line %05d ${pad}\\n' $i; i=$((i+1)); done; echo "end-$i"\n`);
      await until(() => first.stream.isPaused(), 30_000);
      await new Promise((r) => setTimeout(r, 300));
      if (viewerWent) first.stream.destroy();
      const again = session.attachPty({ cols: 80, rows: 24 });
      let after = '';
      again.stream.on('data', (c: Buffer) => (after += c.toString()));
      const screen = await again.screen;
      await until(() => after.includes(`end-${total}\r\n`), 60_000);
      const numbers = (text: string): number[] =>
        text
          .split('\r\n')
          .flatMap((row) => /^(?:\$ )?line (\d{5}) x{60}$/.exec(row)?.[1] ?? [])
          .map(Number);
      const shown = numbers(screen);
      const following = numbers(after);
      const consecutive = (list: number[]): boolean => list.every((n, i) => i === 0 || n === list[i - 1]! + 1);
      expect(shown.length).toBeGreaterThan(100);
      expect(consecutive(shown)).toBe(true);
      expect(consecutive(following)).toBe(true);
      expect(following.at(-1)).toBe(total - 1);
      // At most the one line the switch cut in two, its start on the screen and its end in what follows.
      expect(following[0]! - shown.at(-1)!).toBeGreaterThanOrEqual(1);
      expect(following[0]! - shown.at(-1)!).toBeLessThanOrEqual(2);
      await session.stop();
    },
    90_000,
  );

  it("keeps the window's scrollback of a long output, not all of it", async () => {
    const { session } = await start();
    const pty = session.attachPty({ cols: 80, rows: 24 });
    let seen = '';
    pty.stream.on('data', (c: Buffer) => (seen = (seen + c.toString()).slice(-200)));
    const total = TERMINAL_SCROLLBACK_LINES + 5000;
    pty.stream.write(`i=0; while [ $i -lt ${total} ]; do echo "line $i"; i=$((i+1)); done; echo "all-done-$i"\n`);
    // The output's last line, not the terminal's echo of the command (which ends in the same words
    // and comes first): waiting for the echo attached again before the loop had printed anything.
    await until(() => seen.includes(`all-done-${total}\r\n`), 60_000);
    const again = session.attachPty({ cols: 80, rows: 24 });
    const lines = (await again.screen).split('\r\n');
    expect(lines.length).toBeLessThanOrEqual(TERMINAL_SCROLLBACK_LINES + 24);
    expect(lines.length).toBeGreaterThan(TERMINAL_SCROLLBACK_LINES);
    expect(lines).toContain(`line ${TERMINAL_SCROLLBACK_LINES + 4999}`);
    expect(lines).not.toContain('line 0');
    await session.stop();
  }, 90_000);

  it("runs the program the session names on its terminal, with that program's own environment and its settings written into the home first", async () => {
    const guestHome = join(home.root, 'guest-home');
    mkdirSync(guestHome);
    const program =
      'echo "started as $0 in $(basename "$PWD") with key=$AGENT_KEY"; cat "$HOME/.tool/settings.json"; printf "ask> "; read line; echo "asked: $line"; exit 3';
    const { session } = await start(
      null,
      {
        terminal: () => ({
          argv: ['sh', '-c', program, 'tool'],
          env: { AGENT_KEY: 'k-123' },
          homeFiles: [{ path: '.tool/settings.json', content: '{"trusted":true}\n' }],
        }),
      },
      { HOME: guestHome },
    );
    expect(readFileSync(join(guestHome, '.tool/settings.json'), 'utf8')).toBe('{"trusted":true}\n');
    const pty = session.attachPty({ cols: 80, rows: 24 });
    let seen = '';
    pty.stream.on('data', (c: Buffer) => (seen += c.toString()));
    const exited = new Promise<{ code: number | null }>((r) => pty.stream.once('exit', r));
    const until = async (text: string) => {
      const end = Date.now() + 5000;
      while (!seen.includes(text) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toContain(text);
    };
    await until('ask> ');
    expect(seen).toMatch(/started as tool in ws-\w+ with key=k-123\r\n\{"trusted":true\}\r\n/);
    pty.stream.write('hello\r');
    await until('asked: hello');
    expect(await exited).toMatchObject({ code: 3 });
    // The key is the terminal program's alone: a command run beside it does not see it.
    expect(await output(session, ['sh', '-c', 'printf "%s" "${AGENT_KEY-unset}"'])).toMatchObject({ out: 'unset', code: 0 });
    await session.stop();
    const argvs = rows<{ argv: string }>(session, 'SELECT argv FROM exec_events')
      .map((r) => r.argv)
      .join('\n');
    expect(argvs).toContain('.tool/settings.json');
    expect(argvs).not.toContain('trusted');
  });

  it('marks the session crashed and rolls it up when the agent dies, keeping the reason', async () => {
    const { session, backend } = await start('crashy');
    await output(session, ['true']);
    process.kill(backend.pid!, 'SIGKILL');
    const end = await session.ended;
    expect(end.status).toBe('crashed');
    expect(end.reason).toMatch(/QEMU exited \(killed by SIGKILL\)|agent connection closed/);
    const db = openMainDb(home);
    const record = getSession(db, asSessionId(session.id));
    db.close();
    expect(record).toMatchObject({ status: 'crashed', name: 'crashy' });
    expect(record!.statusReason).toBe(end.reason);
    expect(readFileSync(session.paths.dbPath).length).toBeGreaterThan(0);
  });

  it('stops in order: the agent is told to shut down and the session is stopped, with boot figures kept', async () => {
    const { session } = await start();
    const end = await session.stop();
    expect(end).toEqual({ status: 'stopped', reason: null });
    const meta = Object.fromEntries(
      rows<{ key: string; value: string }>(session, "SELECT key, value FROM session_meta WHERE key LIKE 'vm_%'").map((r) => [
        r.key,
        r.value,
      ]),
    );
    expect(meta.vm_agent).toBe('capsem-agent 0.1.0');
    expect(Number(meta.vm_boot_ready_ms)).toBeGreaterThan(0);
  });
});

describe.skipIf(missing !== null)(`resuming sessions with the real agent${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const rhome = tempHome();
  afterAll(() => rhome.remove());
  const hostFor = (workspace: string) =>
    new VmHost({
      home: rhome,
      backend: () => new HostAgentBackend(workspace),
      plan: () => async (paths) => hostAgentPlan(paths.workspaceDir, 0, null),
    });
  const quiet = { status: () => {}, progress: () => {} };
  const resolve = (name: string) => {
    const db = openMainDb(rhome);
    try {
      return resolveSession(rhome, db, name);
    } finally {
      db.close();
    }
  };
  const column = <T>(dbPath: string, sql: string): T[] => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare(sql).pluck().all() as T[];
    } finally {
      db.close();
    }
  };
  const rowsOf = <T>(dbPath: string, sql: string): T[] => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  const fsSeqs = (dbPath: string) => column<number>(dbPath, 'SELECT seq FROM fs_events ORDER BY seq');

  it('resumes a named session by name after a restart: same id, same session.db, its seq continues', async () => {
    const first = await hostFor(join(rhome.root, 'unused')).start({ name: 'co-work1', image: 'minimal', command: ['test'] }, quiet);
    const id = first.id;
    expect((await first.exec(['sh', '-c', 'echo one > first.txt']).result).code).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    await first.stop();
    const before = fsSeqs(first.paths.dbPath);
    expect(before.length).toBeGreaterThan(0);

    // A new host is a restarted app: it knows the session only from main.db.
    const host = hostFor(join(rhome.root, 'unused'));
    const resumed = await host.resume(resolve('co-work1'), quiet);
    expect(resumed.id).toBe(id);
    expect(resumed.paths.dbPath).toBe(first.paths.dbPath);
    expect(await host.resume(id, quiet)).toBe(resumed);
    expect(host.live).toHaveLength(1);
    const db = openMainDb(rhome);
    expect(getSession(db, asSessionId(id))).toMatchObject({ status: 'running' });
    db.close();
    expect((await resumed.exec(['sh', '-c', 'cat first.txt && echo two > second.txt && echo again > first.txt']).result).code).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    await resumed.stop();
    // The resumed session kept its baseline (taken once) and went on from where its recording left off.
    const firstVersions = rowsOf<{ action: string; before_hash: string | null; after_hash: string | null }>(
      first.paths.dbPath,
      "SELECT action, before_hash, after_hash FROM fs_events WHERE path = 'first.txt' AND after_hash IS NOT NULL ORDER BY seq",
    );
    expect(firstVersions.at(-1)).toMatchObject({ action: 'modified', before_hash: firstVersions.at(-2)!.after_hash });
    expect(column<string>(first.paths.dbPath, "SELECT value FROM session_meta WHERE key = 'workspace_baseline'")).toHaveLength(1);
    const after = fsSeqs(first.paths.dbPath);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(Math.min(...after.slice(before.length))).toBeGreaterThan(Math.max(...before));
    const execs = column<string | null>(first.paths.dbPath, 'SELECT stdout_preview FROM exec_events ORDER BY id');
    expect(execs).toEqual([null, 'one\n']);
  });

  it('refuses to resume an unnamed session, saying why', async () => {
    const host = hostFor(join(rhome.root, 'unused'));
    const s = await host.start({ name: null, image: 'minimal', command: ['test'] }, quiet);
    await s.stop();
    await expect(host.resume(s.id, quiet)).rejects.toThrow(/only named sessions keep their disk/);
  });

  it('resolves two sessions once named alike, one renamed since, to the right ids', async () => {
    const host = hostFor(join(rhome.root, 'unused'));
    const a = await host.start({ name: 'pair-work', image: 'minimal', command: ['test'] }, quiet);
    await a.stop();
    const db = openMainDb(rhome);
    renameSession(db, a.id, 'pair-work-old');
    db.close();
    const b = await host.start({ name: 'pair-work', image: 'minimal', command: ['test'] }, quiet);
    await b.stop();
    expect(resolve('pair-work')).toBe(b.id);
    expect(resolve('pair-work-old')).toBe(a.id);
    expect(a.id).not.toBe(b.id);
  });
});
