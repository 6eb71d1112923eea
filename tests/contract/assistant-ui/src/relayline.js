// The recipes an assistant-ui page needs with relayline (docs/clients.md, "assistant-ui"): its
// AI SDK runtime over `useChat` with relayline's own chat id, the thread's history
// from GET /api/chat/<id>, and a Stop that stops the run, not only the request.
//
// assistant-ui's Stop calls `useChat`'s `stop()`, which only aborts the fetch; relayline
// treats that as a disconnect and lets the run go on (so that a reload can resume it).
// Two ways to make Stop stop the run:
// - `stop: 'route'` (for a page that resumes): Stop also POSTs /api/chat/<id>/stop;
// - `stop: 'disconnect'` (for a page that does not): every chat request says
//   `?onDisconnect=cancel`, so the dropped request itself stops the run (a reload
//   mid-answer stops it too: such a page cannot resume it anyway).
import { useChat } from '@ai-sdk/react';
import { useAISDKRuntime } from '@assistant-ui/react-ai-sdk';
import { DefaultChatTransport } from 'ai';
import { useState } from 'react';

const chatUrl = (chatId) => `/api/chat/${encodeURIComponent(chatId)}`;

/** The thread's `UIMessage[]` (GET /api/chat/<id>); a thread relayline does not know yet is empty. */
export async function loadHistory(chatId) {
  const response = await fetch(chatUrl(chatId));
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`GET ${chatUrl(chatId)} answered ${response.status}: ${await response.text()}`);
  return (await response.json()).messages;
}

/** Ask relayline to stop the thread's run: `{success, stopped}`. */
export async function stopRun(chatId, fetchImpl = fetch) {
  const response = await fetchImpl(`${chatUrl(chatId)}/stop`, { method: 'POST' });
  return response.json();
}

/**
 * assistant-ui's runtime for one relayline thread. `messages`: its history (loadHistory);
 * `resume`: reattach to a running answer on mount (GET /api/chat/<id>/stream);
 * `stop`: 'route' or 'disconnect' (above); `fetch`: the transport's fetch.
 */
export function useRelaylineRuntime({ chatId, messages, resume = false, stop = 'route', sendAutomaticallyWhen, fetch: fetchImpl }) {
  const [transport] = useState(
    () =>
      new DefaultChatTransport({
        api: stop === 'disconnect' ? '/api/chat?onDisconnect=cancel' : '/api/chat',
        fetch: fetchImpl,
      }),
  );
  const chat = useChat({ id: chatId, messages, resume, transport, sendAutomaticallyWhen });
  const stopBoth = async () => {
    if (stop === 'route') void stopRun(chatId, fetchImpl).catch(() => {}); // the abort below still ends the page's request
    await chat.stop();
  };
  return { chat, runtime: useAISDKRuntime({ ...chat, stop: stopBoth }) };
}
