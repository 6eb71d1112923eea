// A relayed AG-UI turn read by RelaylineAgent, imported from the installed package: the
// web app relays the segment's log from Redis as one SSE response.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EventType, type BaseEvent, type TextMessageContentEvent } from '@ag-ui/client';
import { RelaylineAgent } from '@relayline/client/agent';

import { ANSWER, BASE_URL, getJson, newThreadId, type ThreadState } from './stack.js';

test('RelaylineAgent from @relayline/client/agent reads a relayed AG-UI turn', async () => {
  const threadId = newThreadId('relay');
  const contentTypes: (string | null)[] = [];
  const agent = new RelaylineAgent({
    url: `${BASE_URL}/agui`,
    threadId,
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      contentTypes.push(response.headers.get('content-type'));
      return response;
    },
  });
  agent.addMessage({ id: `${threadId}-u1`, role: 'user', content: 'Hello' });
  const events: BaseEvent[] = [];
  await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });

  assert.deepEqual(contentTypes.map((type) => type?.split(';')[0]), ['text/event-stream']);
  assert.equal(events[0]?.type, EventType.RUN_STARTED);
  assert.equal(events.at(-1)?.type, EventType.RUN_FINISHED, JSON.stringify(events.map((e) => e.type)));
  const text = events
    .filter((event): event is TextMessageContentEvent => event.type === EventType.TEXT_MESSAGE_CONTENT)
    .map((event) => event.delta)
    .join('');
  assert.equal(text, ANSWER);
  const state = await getJson<ThreadState>(`/api/threads/${threadId}`);
  assert.equal(state.run?.status, 'completed');
  // the class's own routes, resolved from the agent's url
  assert.equal(agent.stopEndpoint(), `${BASE_URL}/agui/stop/${threadId}`);
  assert.equal(agent.connectEndpoint(), `${BASE_URL}/agui/connect`);
});
