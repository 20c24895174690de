import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import { BROWSER_IMPORT_PATH, BROWSER_WS_PATH } from './electron/contract/browserMode.ts';

// The renderer is a static bundle: the Electron shell loads it from disk and browser mode serves
// it from loopback, so asset paths are relative (base './'). In dev, the core helper runs a dev
// core and tells us its port; the WebSocket the renderer speaks is proxied to it so the page and
// the socket share one origin (the token check and CSP stay the same as in production).
const corePort = process.env.CAPSEM_CORE_PORT;

// A CSP in the built page only: Vite's dev server injects inline scripts (React refresh) that a
// strict policy would block. Styles stay 'unsafe-inline' because xterm.js injects a <style>.
function contentSecurityPolicy(): Plugin {
  const policy = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self' ws: wss:",
    "object-src 'none'",
    "base-uri 'none'",
  ].join('; ');
  return {
    name: 'capsem-csp',
    apply: 'build',
    transformIndexHtml: (html) => html.replace('<head>', `<head>\n    <meta http-equiv="Content-Security-Policy" content="${policy}" />`),
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('./renderer', import.meta.url)),
  base: './',
  plugins: [react(), contentSecurityPolicy()],
  build: {
    outDir: fileURLToPath(new URL('./dist/renderer', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1000,
  },
  server: {
    host: '127.0.0.1',
    proxy: corePort
      ? {
          [BROWSER_WS_PATH]: { target: `http://127.0.0.1:${corePort}`, ws: true },
          [BROWSER_IMPORT_PATH]: { target: `http://127.0.0.1:${corePort}` },
        }
      : undefined,
  },
});
