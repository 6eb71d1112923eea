// One chat with relayline through `useChat` and `DefaultChatTransport` (POST /api/chat
// on this page's origin). Frontend tools run from `onToolCall` without awaiting their
// work; approvals go through `addToolApprovalResponse`; continuations are sent by the
// step-scoped `sendAutomaticallyWhen` of autoSend.js. Stop is wired as the AI SDK's
// docs ("Stop an Active Resumable Stream") wire it: `stop()` only aborts this page's
// fetch (a disconnect, which leaves the run going), so the button first POSTs
// /api/chat/<id>/stop, which stops the run in the worker.
//
// Everything the user sees is in the DOM with stable hooks for the tests:
//   #status[data-status][data-finished]   useChat status, responses finished so far
//   #error[data-http-status]              the chat error
//   .msg[data-role][data-message-id][data-stopped]   one UI message; its parts inside
//                                         (data-stopped: its metadata says stopped)
//   .tool[data-call-id][data-state][data-handler-runs]   one tool part
// and `window.__relayline` holds what the page did: the requests it sent, the
// predicate's decisions and the last rendered chat state.
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, getToolName, isToolUIPart } from 'ai';
import { useEffect, useState, useSyncExternalStore } from 'react';
import { createAutoSend } from './autoSend.js';
import { createToolRunner } from './tools.js';

/**
 * A fetch that logs each chat request (what the backend was sent) and its status; a
 * resume (useChat's GET of the chat's stream) goes to `resumes` instead.
 */
function recordingFetch(requests, resumes) {
  return async (url, init) => {
    if (!init?.body) {
      const entry = { url: String(url), status: null };
      resumes.push(entry);
      const response = await fetch(url, init);
      entry.status = response.status;
      return response;
    }
    const body = JSON.parse(init.body);
    const entry = {
      trigger: body.trigger,
      messageId: body.messageId ?? null,
      messages: body.messages,
      status: null,
    };
    requests.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    return response;
  };
}

/** The error as the user reads it: the backend's `error` text for an HTTP refusal. */
function describeError(error) {
  if (typeof error.statusCode !== 'number') return error.message;
  try {
    return JSON.parse(error.responseBody).error;
  } catch {
    return error.message;
  }
}

function ToolPart({ part, tools, onDecide }) {
  const [reason, setReason] = useState('');
  const name = getToolName(part);
  const { toolCallId, state, approval } = part;
  return (
    <section
      className="tool"
      aria-label={`${name} ${toolCallId}`}
      data-call-id={toolCallId}
      data-tool={name}
      data-state={state}
      data-handler-runs={tools.runsOf(toolCallId)}
    >
      <h3>
        {name} <span className="state">{state}</span>
      </h3>
      <code className="input">{JSON.stringify(part.input ?? {})}</code>
      {approval?.requestReason && <p className="request-reason">{approval.requestReason}</p>}
      {state === 'approval-requested' && (
        <div className="approval">
          <input aria-label="Reason" value={reason} onChange={(e) => setReason(e.target.value)} />
          <button type="button" onClick={() => onDecide(approval.id, true)}>
            Approve
          </button>
          <button type="button" onClick={() => onDecide(approval.id, false, reason || undefined)}>
            Reject
          </button>
        </div>
      )}
      {tools.isHeld(toolCallId) && (
        <button type="button" onClick={() => tools.release(toolCallId)}>
          Release
        </button>
      )}
      {state === 'output-available' && (
        <pre className="output">
          {typeof part.output === 'string' ? part.output : JSON.stringify(part.output)}
        </pre>
      )}
      {state === 'output-error' && <p className="tool-error">{part.errorText}</p>}
      {state === 'output-denied' && (
        <p className="denied">Denied{approval?.reason ? `: ${approval.reason}` : ''}</p>
      )}
    </section>
  );
}

function Part({ part, tools, onDecide }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'reasoning') return <p className="reasoning">{part.text}</p>;
  if (part.type === 'step-start') return <hr className="step" />;
  if (isToolUIPart(part)) return <ToolPart part={part} tools={tools} onDecide={onDecide} />;
  return null;
}

export function ChatPage({ chatId, initialMessages, eager, resume }) {
  const [tools] = useState(createToolRunner);
  useSyncExternalStore(tools.subscribe, tools.getVersion);
  const [record] = useState(() => ({ requests: [], resumes: [], decisions: [], stops: [] }));
  const [transport] = useState(
    () =>
      new DefaultChatTransport({
        api: '/api/chat',
        fetch: recordingFetch(record.requests, record.resumes),
      }),
  );
  const [sendAutomaticallyWhen] = useState(() =>
    createAutoSend({ eager, onDecision: (decision) => record.decisions.push(decision) }),
  );
  const [finished, setFinished] = useState(0);
  const [draft, setDraft] = useState('');

  const {
    messages,
    status,
    error,
    sendMessage,
    setMessages,
    stop,
    clearError,
    addToolOutput,
    addToolApprovalResponse,
  } = useChat({
    id: chatId,
    messages: initialMessages,
    resume,
    transport,
    sendAutomaticallyWhen,
    onToolCall: ({ toolCall }) => {
      // Not awaited: useChat waits for this callback before it reads the next chunk,
      // and addToolOutput queues behind that same work.
      const { toolName: tool, toolCallId } = toolCall;
      tools.run(toolCall).then(
        (output) => addToolOutput({ tool, toolCallId, output }),
        (failure) =>
          addToolOutput({ tool, toolCallId, state: 'output-error', errorText: failure.message }),
      );
    },
    onFinish: () => setFinished((count) => count + 1),
  });

  useEffect(() => {
    window.__relayline = {
      chatId,
      requests: record.requests,
      resumes: record.resumes,
      decisions: record.decisions,
      stops: record.stops,
      handlerRuns: tools.allRuns(),
      state: { status, finished, error: error ? describeError(error) : null, messages },
    };
  });

  const busy = status === 'submitted' || status === 'streaming';
  const onDecide = (id, approved, reason) => addToolApprovalResponse({ id, approved, reason });
  const submit = (event) => {
    event.preventDefault();
    if (!draft.trim() || busy) return;
    sendMessage({ text: draft });
    setDraft('');
  };
  // The docs' order: ask the server to stop the run, then stop reading locally. The
  // page cannot name the active stream (relayline does not tell the browser its id), so
  // it sends only the partial answer, which relayline ignores (the worker keeps it).
  const stopAnswer = () => {
    const last = messages.at(-1);
    const entry = { at: Date.now(), status: null, answer: null, answeredAt: null };
    record.stops.push(entry);
    void fetch(`/api/chat/${encodeURIComponent(chatId)}/stop`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(last?.role === 'assistant' ? { assistantMessage: last } : {}),
    }).then(async (response) => {
      entry.status = response.status;
      entry.answer = await response.json();
      entry.answeredAt = Date.now();
    }, (failure) => {
      entry.status = `failed: ${failure.message}`;
    });
    void stop();
  };
  // After a refused request the unsent user message is taken back; an answer that
  // failed midway stays as the user saw it.
  const dismiss = () => {
    if (messages.at(-1)?.role === 'user') setMessages(messages.slice(0, -1));
    clearError();
  };

  return (
    <main>
      <h1>Chat {chatId}</h1>
      <ol id="messages">
        {messages.map((message) => (
          <li
            key={message.id}
            className={`msg ${message.role}`}
            data-role={message.role}
            data-message-id={message.id}
            data-stopped={message.metadata?.stopped === true ? 'true' : undefined}
          >
            {message.parts.map((part, index) => (
              <Part key={index} part={part} tools={tools} onDecide={onDecide} />
            ))}
            {message.metadata?.stopped === true && <p className="stopped">Stopped</p>}
          </li>
        ))}
      </ol>
      <p id="status" data-status={status} data-finished={finished}>
        {status}
      </p>
      {error && (
        <div id="error" role="alert" data-http-status={error.statusCode ?? ''}>
          <p>{describeError(error)}</p>
          <button type="button" onClick={dismiss}>
            Dismiss
          </button>
        </div>
      )}
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
