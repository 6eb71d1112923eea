// Builds the two cross-origin pages into build/ (git-ignored): index.html (useChat) and
// agui.html (@ag-ui/client). `base: './'` keeps asset URLs relative; the pages call
// relayline by the absolute URL they are given (`?api=`), on another origin.
import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: 'build',
    emptyOutDir: true,
    rollupOptions: {
      input: { chat: resolve(import.meta.dirname, 'index.html'), agui: resolve(import.meta.dirname, 'agui.html') },
    },
  },
});
