import { describe, expect, it } from 'vitest';
import { formatProgress, formatStageDone, progressLine } from '../../../electron/cli/progressLine.ts';
import type { BuildStage } from '../../../electron/contract/buildStages.ts';

describe('progressLine', () => {
  it('formats a stage with its percentage and cuts to the width', () => {
    expect(formatProgress({ stage: 'squashfs', message: 'compressing', fraction: 0.456 })).toBe('[ 46%] squashfs: compressing');
    expect(formatProgress({ stage: 'download', message: 'x'.repeat(100), fraction: 2 }, 30)).toHaveLength(30);
  });

  it('redraws one line on a TTY and prints plain lines per stage or tenth otherwise', () => {
    const tty: string[] = [];
    const line = progressLine({ isTTY: true, columns: 80, write: (t: string) => tty.push(t) });
    line.update({ stage: 'a', message: 'one', fraction: 0.1 });
    line.update({ stage: 'a', message: 'two', fraction: 0.12 });
    line.finish('done');
    expect(tty).toEqual(['\r\x1b[K[ 10%] a: one', '\r\x1b[K[ 12%] a: two', '\r\x1b[K', 'done\n']);

    const log: string[] = [];
    const plain = progressLine({ isTTY: false, write: (t: string) => log.push(t) });
    for (const [stage, fraction] of [
      ['a', 0.1],
      ['a', 0.15],
      ['a', 0.21],
      ['b', 0.22],
      ['b', 0.5],
    ] as const)
      plain.update({ stage, message: 'm', fraction });
    plain.finish();
    expect(log).toEqual(['[ 10%] a: m\n', '[ 21%] a: m\n', '[ 22%] b: m\n', '[ 50%] b: m\n']);
  });

  const stage = (name: string, state: BuildStage['state'], fraction: number, ms = 0): BuildStage => ({ stage: name, state, fraction, ms });

  it('shows the running stages of a build side by side, each with its own percent, by the labels people read', () => {
    const build = [
      stage('inputs', 'done', 1, 400),
      stage('download', 'running', 0.634, 9000),
      stage('agents', 'running', 0.2, 3000),
      stage('squashfs', 'pending', 0),
    ];
    expect(formatProgress({ stage: 'agents', message: 'npm ci', fraction: 0.31, build })).toBe(
      '[ 31%] downloading packages 63% · coding agents 20%: npm ci',
    );
  });

  it('prints a ✓ line with its time once per finished stage, above the live line', () => {
    expect(formatStageDone(stage('download', 'done', 1, 72_400))).toBe('✓ downloading packages 1m12s');
    expect(formatStageDone(stage('squashfs', 'done', 1, 8_400))).toBe('✓ compressing the root 8.4s');
    expect(formatStageDone(stage('squashfs', 'skipped', 1, 0))).toBe('✓ compressing the root (skipped)');
    const tty: string[] = [];
    const line = progressLine({ isTTY: true, columns: 200, write: (t: string) => tty.push(t) });
    line.update({
      stage: 'download',
      message: 'a',
      fraction: 0.1,
      build: [stage('download', 'running', 0.5, 10), stage('agents', 'running', 0.1, 10)],
    });
    line.update({
      stage: 'download',
      message: 'b',
      fraction: 0.4,
      build: [stage('download', 'done', 1, 30_000), stage('agents', 'running', 0.6, 31_000)],
    });
    line.update({
      stage: 'agents',
      message: 'c',
      fraction: 0.5,
      build: [stage('download', 'done', 1, 30_000), stage('agents', 'running', 0.7, 32_000)],
    });
    expect(tty).toEqual([
      '\r\x1b[K[ 10%] downloading packages 50% · coding agents 10%: a',
      '\r\x1b[K',
      '✓ downloading packages 30.0s\n',
      '\r\x1b[K[ 40%] coding agents 60%: b',
      '\r\x1b[K[ 50%] coding agents 70%: c',
    ]);

    const log: string[] = [];
    const plain = progressLine({ isTTY: false, write: (t: string) => log.push(t) });
    plain.update({
      stage: 'download',
      message: 'a',
      fraction: 0.1,
      build: [stage('download', 'running', 0.5), stage('agents', 'running', 0.1)],
    });
    plain.update({
      stage: 'agents',
      message: 'a',
      fraction: 0.12,
      build: [stage('download', 'running', 0.55), stage('agents', 'running', 0.2)],
    });
    plain.update({
      stage: 'download',
      message: 'b',
      fraction: 0.13,
      build: [stage('download', 'done', 1, 5000), stage('agents', 'running', 0.3)],
    });
    expect(log).toEqual([
      '[ 10%] downloading packages 50% · coding agents 10%: a\n',
      '✓ downloading packages 5.0s\n',
      '[ 13%] coding agents 30%: b\n',
    ]);
  });
});
