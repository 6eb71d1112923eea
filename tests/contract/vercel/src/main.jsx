import { createRoot } from 'react-dom/client';
import { ChatPage } from './ChatPage.jsx';
import { loadHistory, resolveChatId } from './history.js';

const params = new URLSearchParams(window.location.search);
const chatId = resolveChatId(params);
const root = createRoot(document.getElementById('root'));

loadHistory(chatId).then(
  (messages) =>
    root.render(
      <ChatPage
        chatId={chatId}
        initialMessages={messages}
        eager={params.get('send') === 'eager'}
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
