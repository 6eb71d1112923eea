// useChat (@ai-sdk/react) with DefaultChatTransport against relayline on another origin:
// history from GET <api>/api/chat/<id>, turns to POST <api>/api/chat, resume (on load,
// with ?resume=1) from GET <api>/api/chat/<id>/stream, and Stop as the AI SDK's docs
// wire it: POST <api>/api/chat/<id>/stop naming the stream by the X-Relayline-Stream-Id
// the page read from the response (readable only because relayline exposes it).
//
// Hooks for the tests: #status[data-status][data-finished], .msg[data-role] p.text,
// #load-error, #error; window.__page: {responses, stops, state}.
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { API, AUTH, CREDENTIALS, RESUME, THREAD } from './config.js';

const record = { responses: [], stops: [] };

/** A fetch that keeps what the page could read of each answer (status, exposed headers). */
async function recordingFetch(url, init) {
  const entry = { url: String(url), method: init?.method ?? 'GET', status: null, streamId: null, protocol: null };
  record.responses.push(entry);
  try {
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.streamId = response.headers.get('X-Relayline-Stream-Id');
    entry.protocol = response.headers.get('x-vercel-ai-ui-message-stream');
    return response;
  } catch (failure) {
    entry.status = `failed: ${failure.message}`;
    throw failure;
  }
}

function ChatPage({ initialMessages }) {
  const [transport] = useState(
    () => new DefaultChatTransport({
        api: `${API}/api/chat`,
        headers: AUTH,
        credentials: CREDENTIALS,
        fetch: recordingFetch,
      }),
  );
  const [finished, setFinished] = useState(0);
  const [draft, setDraft] = useState('');
  const { messages, status, error, sendMessage, stop } = useChat({
    id: THREAD,
    messages: initialMessages,
    resume: RESUME,
    transport,
    onFinish: () => setFinished((count) => count + 1),
  });

  useEffect(() => {
    window.__page = { ...record, state: { status, finished, error: error?.message ?? null, messages } };
  });

  const busy = status === 'submitted' || status === 'streaming';
  const submit = (event) => {
    event.preventDefault();
    if (!draft.trim() || busy) return;
    sendMessage({ text: draft });
    setDraft('');
  };
  const stopAnswer = async () => {
    const activeStreamId = record.responses.findLast((r) => r.streamId)?.streamId ?? null;
    const entry = { activeStreamId, status: null, answer: null };
    record.stops.push(entry);
    const response = await fetch(`${API}/api/chat/${encodeURIComponent(THREAD)}/stop`, {
      method: 'POST',
      credentials: CREDENTIALS,
      headers: { ...AUTH, 'Content-Type': 'application/json' },
      body: JSON.stringify({ activeStreamId }),
    });
    entry.status = response.status;
    entry.answer = await response.json();
    void stop();
  };

  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className="msg" data-role={message.role}>
            {message.parts
              .filter((part) => part.type === 'text')
              .map((part, index) => (
                <p key={index} className="text">
                  {part.text}
                </p>
              ))}
          </li>
        ))}
      </ol>
      <p id="status" data-status={status} data-finished={finished}>
        {status}
      </p>
      {error && <p id="error">{error.message}</p>}
      <form onSubmit={submit}>
        <input aria-label="Message" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button type="submit" disabled={busy}>
          Send
        </button>
        {busy && (
          <button type="button" onClick={stopAnswer}>
            Stop
          </button>
        )}
      </form>
    </main>
  );
}

/** The thread's UIMessage[] from relayline; a thread it does not know yet is empty. */
async function loadHistory() {
  const response = await recordingFetch(`${API}/api/chat/${encodeURIComponent(THREAD)}`, {
    headers: AUTH,
    credentials: CREDENTIALS,
  });
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`GET /api/chat/${THREAD} answered ${response.status}: ${await response.text()}`);
  return (await response.json()).messages;
}

const root = createRoot(document.getElementById('root'));
loadHistory().then(
  (messages) => root.render(<ChatPage initialMessages={messages} />),
  (failure) => {
    window.__page = { ...record, state: null };
    root.render(
      <p role="alert" id="load-error">
        {failure.message}
      </p>,
    );
  },
);
