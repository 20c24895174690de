import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());
const child = fileURLToPath(new URL('./fixtures/writerChild.ts', import.meta.url));

it('keeps every acknowledged row and a whole database when the writing process is SIGKILLed', async () => {
  const dbPath = `${home.root}/killed.db`;
  const proc = spawn(process.execPath, ['--import', 'tsx', child, dbPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  let lastAck = 0;
  let acks = 0;
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', () => resolve());
    proc.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('ACK ')) continue;
        lastAck = Number(line.slice(4));
        acks += 1;
        // Kill mid-stream, with batches still queued behind the acknowledged ones.
        if (acks === 40) proc.kill('SIGKILL');
      }
    });
  });
  expect(proc.signalCode).toBe('SIGKILL');
  expect(lastAck).toBeGreaterThan(1000);

  const db = new Database(dbPath);
  expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  const acknowledged = db
    .prepare('SELECT (SELECT count(*) FROM net_events WHERE seq <= ?) + (SELECT count(*) FROM model_calls WHERE seq <= ?) AS n')
    .get(lastAck, lastAck) as { n: number };
  // seq is dense from 1, so every acknowledged row is there exactly when the count equals the ack.
  expect(acknowledged.n).toBe(lastAck);
  const orphanBlobs = db
    .prepare('SELECT count(*) AS n FROM event_body_blobs b WHERE NOT EXISTS (SELECT 1 FROM net_events e WHERE e.event_id = b.event_id)')
    .get() as { n: number };
  expect(orphanBlobs.n).toBe(0);
  db.close();
});
