// The history adapter assistant-ui's AG-UI runtime (`useAgUiRuntime`) needs with
// relayline: the thread as relayline stores it (GET /agui/threads/<id>, AG-UI
// messages) converted to assistant-ui's messages, one branch in order. An answer is
// stored as several AG-UI messages (reasoning, assistant text and tool calls, tool
// results), which the live runtime shows as one assistant message: consecutive
// assistant messages are joined so the reload shows what the live page showed.
// relayline keeps the thread itself, so `append` stores nothing.
import { fromThreadMessageLike } from '@assistant-ui/react';
import { fromAgUiMessages } from '@assistant-ui/react-ag-ui';

const partsOf = (content) => (typeof content === 'string' ? [{ type: 'text', text: content }] : content);

/** Consecutive assistant messages as one (the last one's id, every part in order). */
function joinAnswers(likes) {
  const joined = [];
  for (const like of likes) {
    const last = joined.at(-1);
    if (last?.role === 'assistant' && like.role === 'assistant') {
      joined[joined.length - 1] = { ...last, ...like, content: [...partsOf(last.content), ...partsOf(like.content)] };
    } else {
      joined.push(like);
    }
  }
  return joined;
}

export function relaylineHistory(threadId) {
  return {
    async load() {
      const response = await fetch(`/agui/threads/${encodeURIComponent(threadId)}`);
      if (response.status === 404) return { messages: [] };
      if (!response.ok) throw new Error(`GET /agui/threads/${threadId} answered ${response.status}`);
      const { messages } = await response.json();
      let parentId = null;
      return {
        messages: joinAnswers(fromAgUiMessages(messages)).map((like, index) => {
          const message = fromThreadMessageLike(like, like.id ?? `${threadId}-${index}`, { type: 'complete', reason: 'unknown' });
          const item = { parentId, message };
          parentId = message.id;
          return item;
        }),
      };
    },
    async append() {},
  };
}
