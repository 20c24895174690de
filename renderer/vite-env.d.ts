// Vite's client types: stylesheet imports (ours and xterm's) and import.meta.env.
/// <reference types="vite/client" />
