// Where the page's conversation comes from: the chat id lives in sessionStorage (a
// reload of the tab continues the same thread; `?thread=<id>` picks one), and the
// messages come from the backend, `GET /api/chat/<id>`, never from browser memory.

const STORAGE_KEY = 'relayline.chatId';

export function resolveChatId(params) {
  const chatId =
    params.get('thread') ?? sessionStorage.getItem(STORAGE_KEY) ?? `chat-${crypto.randomUUID()}`;
  sessionStorage.setItem(STORAGE_KEY, chatId);
  return chatId;
}

/** The thread's `UIMessage[]`; a thread the backend does not know yet is empty. */
export async function loadHistory(chatId) {
  const response = await fetch(`/api/chat/${encodeURIComponent(chatId)}`);
  if (response.status === 404) return [];
  if (!response.ok) {
    throw new Error(`GET /api/chat/${chatId} answered ${response.status}: ${await response.text()}`);
  }
  return (await response.json()).messages;
}
