// The page's frontend tools: what runs in the browser when the backend dispatches a
// call (`tool-input-available` → useChat's `onToolCall`). The runner counts every
// execution per call id, and a call whose input says `hold: true` waits until the user
// presses "Release" on its card, so tests can look at the run while the page works
// and answer the calls of one step at different times.

/** The long multibyte text `lookup({query: "long"})` answers (about 24 kB of UTF-8). */
export const LONG_TEXT = 'Grüße aus Zürich, 東京の空、🚀✨ naïve café — '.repeat(400).trim();

export function createToolRunner() {
  const runs = new Map(); // call id -> executions
  const holds = new Map(); // call id -> release() of a held call
  const listeners = new Set();
  let version = 0;
  const changed = () => {
    version += 1;
    listeners.forEach((listener) => listener());
  };

  const hold = (toolCallId) =>
    new Promise((resolve) => {
      holds.set(toolCallId, resolve);
      changed();
    });

  const handlers = {
    read_title: () => document.title,
    browser: ({ page }) => `${page} opened`,
    lookup: ({ query }) => (query === 'long' ? LONG_TEXT : `found ${query}`),
  };

  return {
    /** Execute one dispatched call; resolves with its output, rejects with its error. */
    async run({ toolCallId, toolName, input }) {
      runs.set(toolCallId, (runs.get(toolCallId) ?? 0) + 1);
      changed();
      const handler = handlers[toolName];
      if (!handler) throw new Error(`The page has no tool '${toolName}'.`);
      if (input?.hold) await hold(toolCallId);
      return handler(input ?? {});
    },
    release(toolCallId) {
      const resolve = holds.get(toolCallId);
      holds.delete(toolCallId);
      changed();
      resolve?.();
    },
    isHeld: (toolCallId) => holds.has(toolCallId),
    runsOf: (toolCallId) => runs.get(toolCallId) ?? 0,
    allRuns: () => Object.fromEntries(runs),
    // for React's useSyncExternalStore
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    getVersion: () => version,
  };
}
