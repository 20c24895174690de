import type { CapsemApi } from '../../electron/contract/appContract.ts';

// What the page may find on `window`: the Electron preload's API, and the test probe's frames.
declare global {
  interface Window {
    capsem?: CapsemApi;
    __capsemFrames?: number[];
  }
}

export {};
