import { afterEach, describe, expect, it, vi } from 'vitest';
import { SparePool, type Spare } from '../../../electron/vm/spareVm.ts';

/** A spare whose life the test decides: it can die, stop answering or be unfit. */
class FakeSpare implements Spare {
  answering = true;
  fit = true;
  /** Whether it says its warm-up has ended (and asked how often). */
  quiets = true;
  quiesced = 0;
  discarded = false;
  private die!: () => void;
  readonly ended = new Promise<void>((r) => (this.die = r));
  constructor(readonly n: number) {}
  alive(): Promise<boolean> {
    return Promise.resolve(this.answering && !this.discarded);
  }
  quiesce(): Promise<boolean> {
    this.quiesced += 1;
    return Promise.resolve(this.quiets);
  }
  discard(): Promise<void> {
    this.discarded = true;
    this.die();
    return Promise.resolve();
  }
  kill(): void {
    this.die();
  }
}

function pool(options: { enabled?: () => boolean; failBoots?: number } = {}) {
  const booted: FakeSpare[] = [];
  let failBoots = options.failBoots ?? 0;
  const problems: string[] = [];
  const spares = new SparePool<FakeSpare>({
    enabled: options.enabled ?? (() => true),
    boot: () => {
      if (failBoots > 0) {
        failBoots -= 1;
        return Promise.reject(new Error('no QEMU'));
      }
      const spare = new FakeSpare(booted.length);
      booted.push(spare);
      return Promise.resolve(spare);
    },
    fit: (spare) => spare.fit,
    onProblem: (m) => problems.push(m),
  });
  return { spares, booted, problems };
}

/** Lets the pool's timers fire and its promises settle. */
async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

describe('SparePool', () => {
  afterEach(() => vi.useRealTimers());

  it('boots one spare when scheduled and hands it out once', async () => {
    vi.useFakeTimers();
    const { spares, booted } = pool();
    spares.schedule(1000);
    spares.schedule(1000);
    await advance(1000);
    expect(booted).toHaveLength(1);
    expect(spares.ready).toBe(true);
    const first = await spares.take();
    expect(first).toBe(booted[0]);
    // Never adopted twice: the pool no longer holds it.
    expect(await spares.take()).toBeNull();
    expect(spares.ready).toBe(false);
  });

  it('a spare that dies while waiting is discarded and replaced after 5 s, then 10 s', async () => {
    vi.useFakeTimers();
    const { spares, booted, problems } = pool();
    spares.schedule(0);
    await advance(0);
    booted[0]!.kill();
    await advance(0);
    expect(spares.ready).toBe(false);
    expect(problems.at(-1)).toMatch(/ended while it waited/);
    await advance(4999);
    expect(booted).toHaveLength(1);
    await advance(1);
    expect(booted).toHaveLength(2);
    booted[1]!.kill();
    await advance(9999);
    expect(booted).toHaveLength(2);
    await advance(1);
    expect(booted).toHaveLength(3);
    expect(await spares.take()).toBe(booted[2]);
  });

  it('a spare that does not answer is not adopted, and is replaced', async () => {
    vi.useFakeTimers();
    const { spares, booted } = pool();
    spares.schedule(0);
    await advance(0);
    booted[0]!.answering = false;
    expect(await spares.take()).toBeNull();
    expect(booted[0]!.discarded).toBe(true);
    await advance(5000);
    expect(booted).toHaveLength(2);
    expect(await spares.take()).toBe(booted[1]);
  });

  it('a spare is handed out only once it has ended its warm-up; one that cannot is discarded and replaced', async () => {
    vi.useFakeTimers();
    const { spares, booted, problems } = pool();
    spares.schedule(0);
    await advance(0);
    booted[0]!.quiets = false;
    expect(await spares.take()).toBeNull();
    expect(booted[0]!.discarded).toBe(true);
    expect(problems.at(-1)).toMatch(/did not end its warm-up/);
    await advance(5000);
    expect(await spares.take()).toBe(booted[1]);
    expect(booted[1]!.quiesced).toBe(1);
  });

  it('a spare of an image no longer current is discarded, not adopted', async () => {
    vi.useFakeTimers();
    const { spares, booted, problems } = pool();
    spares.schedule(0);
    await advance(0);
    booted[0]!.fit = false;
    expect(await spares.take()).toBeNull();
    expect(booted[0]!.discarded).toBe(true);
    expect(problems.at(-1)).toMatch(/no longer the current one/);
  });

  it('backs off from 5 s, doubling, up to 5 min when boots fail', async () => {
    vi.useFakeTimers();
    const { spares, booted, problems } = pool({ failBoots: 10 });
    spares.schedule(0);
    await advance(0);
    const gaps = [5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000];
    for (const gap of gaps) {
      const before = problems.length;
      await advance(gap - 1);
      expect(problems.length).toBe(before);
      await advance(1);
      expect(problems.length).toBe(before + 1);
    }
    expect(booted).toHaveLength(0);
  });

  it('an adopted spare ending is not a failure: nothing is booted for it', async () => {
    vi.useFakeTimers();
    const { spares, booted, problems } = pool();
    spares.schedule(0);
    await advance(0);
    const taken = await spares.take();
    taken!.kill();
    await advance(600_000);
    expect(problems).toEqual([]);
    expect(booted).toHaveLength(1);
  });

  it('boots nothing when off, and discards the waiting spare when turned off', async () => {
    vi.useFakeTimers();
    let on = false;
    const { spares, booted } = pool({ enabled: () => on });
    spares.schedule(0);
    await advance(1000);
    expect(booted).toHaveLength(0);
    on = true;
    spares.schedule(0);
    await advance(0);
    expect(booted).toHaveLength(1);
    on = false;
    expect(await spares.take()).toBeNull();
    expect(booted[0]!.discarded).toBe(true);
  });

  it('close discards the waiting spare and boots no more', async () => {
    vi.useFakeTimers();
    const { spares, booted } = pool();
    spares.schedule(0);
    await advance(0);
    await spares.close();
    expect(booted[0]!.discarded).toBe(true);
    spares.schedule(0);
    await advance(1000);
    expect(booted).toHaveLength(1);
  });
});
