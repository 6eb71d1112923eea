// One relayline thread in assistant-ui: `AssistantRuntimeProvider` over the AI SDK
// runtime of src/relayline.js, assistant-ui's own primitives for the thread, composer
// and Stop (`ComposerPrimitive.Cancel`), a toolkit with the page's frontend tools, and
// one tool card for every call (approval buttons through `respondToApproval`).
//
// Stable hooks for the tests:
//   #status[data-running][data-chat-status]    assistant-ui's isRunning, useChat's status
//   .msg[data-role][data-message-id]           one thread message; .text inside
//   .tool[data-call-id][data-status][data-approval][data-result]   one tool call
// and `window.__relayline` what the page did: every request it sent (`requests`:
// chat POSTs, `resumes`: GETs of the stream, `stops`: stop POSTs) and useChat's state.
import {
  AssistantRuntimeProvider,
  AuiConfig,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  Tools,
  defineToolkit,
  useAuiState,
} from '@assistant-ui/react';
import { useEffect, useState } from 'react';
import { createAutoSend } from './autoSend.js';
import { useRelaylineRuntime } from './relayline.js';

/** A fetch that records what the page sent and how it was answered. */
function recordingFetch(record) {
  return async (url, init = {}) => {
    const method = init.method ?? 'GET';
    const list = String(url).endsWith('/stop') ? record.stops : method === 'GET' ? record.resumes : record.requests;
    const body = init.body ? JSON.parse(init.body) : null;
    const entry = { url: String(url), at: Date.now(), trigger: body?.trigger ?? null, status: null, answer: null };
    list.push(entry);
    try {
      const response = await fetch(url, init);
      entry.status = response.status;
      if (list === record.stops) entry.answer = await response.clone().json();
      return response;
    } catch (failure) {
      entry.status = `failed: ${failure.name}`;
      throw failure;
    }
  };
}

function Text({ text }) {
  return <p className="text">{text}</p>;
}

function ToolCard({ toolCallId, toolName, args, result, isError, status, approval, respondToApproval }) {
  const open = approval && approval.approved === undefined && !approval.resolution;
  return (
    <section
      className="tool"
      aria-label={`${toolName} ${toolCallId}`}
      data-call-id={toolCallId}
      data-tool={toolName}
      data-status={status.type}
      data-approval={approval ? String(approval.approved ?? 'requested') : 'none'}
      data-result={result === undefined ? '' : typeof result === 'string' ? result : JSON.stringify(result)}
      data-error={isError ? 'true' : 'false'}
    >
      <h3>
        {toolName} <span className="state">{status.type}</span>
      </h3>
      <code className="input">{JSON.stringify(args ?? {})}</code>
      {open && (
        <div className="approval">
          <button type="button" onClick={() => respondToApproval({ approved: true })}>
            Approve
          </button>
          <button type="button" onClick={() => respondToApproval({ approved: false, reason: 'Not now' })}>
            Reject
          </button>
        </div>
      )}
      {result !== undefined && <pre className="output">{typeof result === 'string' ? result : JSON.stringify(result)}</pre>}
    </section>
  );
}

/** The page's frontend tools: relayline's agent declares them, the browser runs them. */
const toolkit = defineToolkit({
  read_title: {
    type: 'frontend',
    description: 'Read the page title',
    execute: async () => document.title,
    render: ToolCard,
  },
  lookup: {
    type: 'frontend',
    description: 'Look something up in the page',
    execute: async ({ query }) => `found ${query}`,
    render: ToolCard,
  },
});
const config = AuiConfig({ tools: Tools({ toolkit }) });

function Message() {
  const role = useAuiState((s) => s.message.role);
  const id = useAuiState((s) => s.message.id);
  const status = useAuiState((s) => s.message.status?.type ?? 'complete');
  return (
    <MessagePrimitive.Root className={`msg ${role}`} data-role={role} data-message-id={id} data-status={status}>
      <MessagePrimitive.Parts components={{ Text, tools: { Fallback: ToolCard } }} />
    </MessagePrimitive.Root>
  );
}

function Thread({ chatStatus }) {
  const running = useAuiState((s) => s.thread.isRunning);
  return (
    <ThreadPrimitive.Root>
      <ThreadPrimitive.Viewport>
        <ol id="messages">
          <ThreadPrimitive.Messages>{() => <Message />}</ThreadPrimitive.Messages>
        </ol>
      </ThreadPrimitive.Viewport>
      <p id="status" data-running={String(running)} data-chat-status={chatStatus}>
        {running ? 'running' : 'idle'}
      </p>
      <ComposerPrimitive.Root>
        <ComposerPrimitive.Input aria-label="Message" />
        {running ? <ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel> : <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>}
      </ComposerPrimitive.Root>
    </ThreadPrimitive.Root>
  );
}

export function ChatPage({ chatId, initialMessages, stop, resume }) {
  const [record] = useState(() => ({ requests: [], resumes: [], stops: [] }));
  const [fetchImpl] = useState(() => recordingFetch(record));
  const [sendAutomaticallyWhen] = useState(() => createAutoSend());
  const { chat, runtime } = useRelaylineRuntime({
    chatId,
    messages: initialMessages,
    resume,
    stop,
    sendAutomaticallyWhen,
    fetch: fetchImpl,
  });

  useEffect(() => {
    window.__relayline = {
      chatId,
      requests: record.requests,
      resumes: record.resumes,
      stops: record.stops,
      state: { status: chat.status, error: chat.error?.message ?? null, messages: chat.messages },
    };
  });

  return (
    <AssistantRuntimeProvider runtime={runtime} config={config}>
      <main>
        <h1>Chat {chatId}</h1>
        <Thread chatStatus={chat.status} />
      </main>
    </AssistantRuntimeProvider>
  );
}
