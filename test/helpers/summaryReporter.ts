import type { Reporter, TestModule } from 'vitest/node';

/** Ends the run with the plain `N passed, N failed, N skipped` line that CI reads. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed += 1;
        else if (state === 'failed') failedHere += 1;
        else counts.skipped += 1;
      }
      // A file that failed outside its tests (a broken import, a throwing beforeAll) counts as one
      // failure: its tests show as skipped, and the line read "0 failed" on a red run.
      counts.failed += module.state() === 'failed' && failedHere === 0 ? 1 : failedHere;
    }
    process.stdout.write(`\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
