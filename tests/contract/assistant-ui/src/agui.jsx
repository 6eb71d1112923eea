// assistant-ui's AG-UI runtime (`@assistant-ui/react-ag-ui`) on relayline's POST /agui,
// with the history adapter of aguiHistory.js, so a reload shows the thread. Same DOM
// hooks as ChatPage.jsx: #status[data-running], .msg[data-role] with p.text inside.
import { HttpAgent } from '@ag-ui/client';
import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  useAuiState,
} from '@assistant-ui/react';
import { useAgUiRuntime } from '@assistant-ui/react-ag-ui';
import { useMemo } from 'react';
import { createRoot } from 'react-dom/client';
import { relaylineHistory } from './aguiHistory.js';

function Text({ text }) {
  return <p className="text">{text}</p>;
}

function Message() {
  const role = useAuiState((s) => s.message.role);
  const id = useAuiState((s) => s.message.id);
  return (
    <MessagePrimitive.Root className={`msg ${role}`} data-role={role} data-message-id={id}>
      <MessagePrimitive.Parts components={{ Text }} />
    </MessagePrimitive.Root>
  );
}

function Page({ threadId }) {
  const agent = useMemo(() => new HttpAgent({ url: '/agui', threadId }), [threadId]);
  const history = useMemo(() => relaylineHistory(threadId), [threadId]);
  const runtime = useAgUiRuntime({ agent, adapters: { history } });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <Thread />
    </AssistantRuntimeProvider>
  );
}

function Thread() {
  const running = useAuiState((s) => s.thread.isRunning);
  const loading = useAuiState((s) => s.thread.isLoading);
  return (
    <ThreadPrimitive.Root>
      <ol id="messages">
        <ThreadPrimitive.Messages>{() => <Message />}</ThreadPrimitive.Messages>
      </ol>
      <p id="status" data-running={String(running)} data-loading={String(loading)}>
        {running ? 'running' : 'idle'}
      </p>
      <ComposerPrimitive.Root>
        <ComposerPrimitive.Input aria-label="Message" />
        {running ? <ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel> : <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>}
      </ComposerPrimitive.Root>
    </ThreadPrimitive.Root>
  );
}

const threadId = new URLSearchParams(window.location.search).get('thread');
createRoot(document.getElementById('root')).render(<Page threadId={threadId} />);
