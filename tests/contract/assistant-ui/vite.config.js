// Builds the contract page into build/ (git-ignored). `base: './'` keeps every asset
// URL relative, so the page works under whatever path the test server mounts it at;
// the page calls the chat API by absolute path on its own origin.
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  // assistant-ui and the AI SDK make one bundle of about 1 MB: fine for a test page
  build: {
    outDir: 'build',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    // two pages: the AI SDK runtime (index.html) and the AG-UI runtime (agui.html)
    rollupOptions: { input: { index: 'index.html', agui: 'agui.html' } },
  },
});
