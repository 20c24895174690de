/**
 * With `?probe=1`, every requestAnimationFrame delta (ms) is pushed to `window.__capsemFrames`,
 * so a Playwright test can measure scroll smoothness from inside the page.
 */
export function startFrameProbe(): void {
  if (new URLSearchParams(window.location.search).get('probe') !== '1') return;
  const frames: number[] = [];
  window.__capsemFrames = frames;
  let last = performance.now();
  const tick = (now: number) => {
    frames.push(now - last);
    last = now;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
