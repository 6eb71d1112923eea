// @ag-ui/client's HttpAgent against relayline on another origin. The test drives it
// through window.relayline:
//   say(text)  a turn on POST <api>/agui (history from GET <api>/agui/threads/<id> first)
//   connect()  what a reloaded page does to follow a running answer: POST <api>/agui/connect,
//              the stored history as a snapshot, then the running segment live
// Each resolves to what the client saw: event types, the assistant texts of the agent's
// messages, the HTTP status, and the rejection if any.
import { HttpAgent } from '@ag-ui/client';
import { API, AUTH, CREDENTIALS, THREAD } from './config.js';

const state = document.getElementById('state');

/** The thread as relayline stored it ([] when unknown). */
async function history() {
  const url = `${API}/agui/threads/${encodeURIComponent(THREAD)}`;
  const response = await fetch(url, { headers: AUTH, credentials: CREDENTIALS });
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`GET /agui/threads/${THREAD} answered ${response.status}`);
  return (await response.json()).messages;
}

async function run(path, prepare) {
  const seen = { events: [], status: null, error: null, texts: [] };
  window.__live = seen; // what the test watches while a run streams
  try {
    const agent = new HttpAgent({
      url: `${API}${path}`,
      threadId: THREAD,
      headers: AUTH,
      initialMessages: await history(),
      fetch: async (url, init) => {
        const response = await fetch(url, { ...init, credentials: CREDENTIALS });
        seen.status = response.status;
        return response;
      },
    });
    prepare(agent);
    await agent.runAgent({}, { onEvent: ({ event }) => void seen.events.push(event.type) });
    seen.texts = agent.messages.filter((m) => m.role === 'assistant').map((m) => m.content ?? '');
  } catch (failure) {
    seen.error = failure.message;
  }
  return seen;
}

window.relayline = {
  say: (text) =>
    run('/agui', (agent) => agent.addMessage({ id: `${THREAD}-u${Date.now()}`, role: 'user', content: text })),
  connect: () => run('/agui/connect', () => {}),
};
history().then(
  () => {
    state.dataset.state = 'ready';
    state.textContent = 'ready';
  },
  (failure) => {
    state.dataset.state = 'failed';
    state.textContent = failure.message;
  },
);
