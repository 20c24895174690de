import type { CapsemApi, CapsemFiles } from '../../electron/contract/appContract.ts';

// What the page may find on `window`: the Electron preload's API and its file-path helper, and
// the test probe's frames.
declare global {
  interface Window {
    capsem?: CapsemApi;
    capsemFiles?: CapsemFiles;
    __capsemFrames?: number[];
  }
}

export {};
