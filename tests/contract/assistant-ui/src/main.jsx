import { createRoot } from 'react-dom/client';
import { ChatPage } from './ChatPage.jsx';
import { loadHistory } from './relayline.js';

// `?thread=<id>` names the thread (the tests give each a fresh id); `?stop=` and
// `?resume=1` choose the recipe (src/relayline.js).
const params = new URLSearchParams(window.location.search);
const chatId = params.get('thread') ?? `chat-${crypto.randomUUID()}`;
const root = createRoot(document.getElementById('root'));

loadHistory(chatId).then(
  (messages) =>
    root.render(
      <ChatPage
        chatId={chatId}
        initialMessages={messages}
        stop={params.get('stop') ?? 'route'}
        resume={params.get('resume') === '1'}
      />,
    ),
  (error) =>
    root.render(
      <p role="alert" id="load-error">
        {error.message}
      </p>,
    ),
);
