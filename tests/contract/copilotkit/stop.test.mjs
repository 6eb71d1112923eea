// Stop (issue 11). CopilotKit's client posts the runtime's stop route; the runtime's
// InMemoryAgentRunner.stop only calls the run's `agent.abortRun()`, which for a plain
// HttpAgent aborts its fetch to relayline: a disconnect, after which the run would go
// on in the worker (and @ag-ui/client reports its own abort as RUN_ERROR "abort"). The
// bridge's agent is a RelaylineAgent (web/static/relayline-agent.js), whose abortRun()
// posts relayline's stop route instead and reads on: the worker stops the model within
// 1 s, the run ends `cancelled` (GET /agui/threads/<id>), and relayline's stream ends as
// CopilotKit ends a user stop (TEXT_MESSAGE_END, RUN_FINISHED, no RUN_ERROR), so the
// page holds exactly the partial answer relayline kept. The same class stops a run for
// a plain @ag-ui/client user too, and falls back to the fetch abort when the stop
// request fails.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../shared/stack.mjs';
import { RelaylineAgent } from './relayline-agent.mjs';
import {
  BASE_URL,
  Page,
  assertSettled,
  lastAssistantText,
  modelStream,
  newThreadId,
  reload,
  threadRun,
  useBridge,
} from './helpers.mjs';

/** The whole answer of the stop scenarios (tests/contract/copilotkit_agent.py, STORY_TEXT). */
const STORY_TEXT = 'Once upon a time, '.repeat(360);
/** Its deltas: the test agent streams it in chunks of 16 characters. */
const STORY_DELTAS = Math.ceil(STORY_TEXT.length / 16);
/** The bound: no model delta later than this after the stop. */
const STOP_WITHIN_MS = 1000;

const bridge = useBridge();

const contents = (events) => events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').length;

/**
 * Wait (bounded) until relayline reports the thread's run cancelled, then check that its
 * model stream was closed mid-answer within 1 s of `stoppedAt`: the run is written
 * cancelled only after the stream was closed, so the delta log is final by then.
 * Returns the reload and what was measured.
 */
async function assertStoppedOnRelayline(threadId, stoppedAt) {
  const page = await waitFor(
    async () => {
      const current = await reload(threadId);
      return current.status === 'cancelled' && current;
    },
    { what: `the run of ${threadId} to end cancelled on relayline` },
  );
  assert.equal(page.stopped.length, 1, 'one answer is marked stopped');
  assert.equal((await threadRun(threadId)).status, 'cancelled');
  const { deltas, closed } = modelStream(threadId);
  assert.equal(closed.length, 1, 'the loop closed the model stream mid-answer');
  const closedAfter = closed[0].at - stoppedAt;
  const lastDeltaAfter = Math.max(...deltas.map((delta) => delta.at)) - stoppedAt;
  assert.ok(closedAfter <= STOP_WITHIN_MS, `model stream closed ${closedAfter.toFixed(0)} ms after the stop`);
  assert.ok(lastDeltaAfter <= STOP_WITHIN_MS, `a delta came ${lastDeltaAfter.toFixed(0)} ms after the stop`);
  assert.ok(deltas.length < STORY_DELTAS / 4, `${deltas.length} of ${STORY_DELTAS} deltas were streamed`);
  return { page, closedAfter, deltas: deltas.length };
}

/** The stored text of the stopped answer (the reload's last assistant message). */
function storedAnswer(page) {
  const text = lastAssistantText(page.messages);
  assert.ok(text.startsWith('Once upon a time,') && text.length < STORY_TEXT.length, `stored ${text.length} chars`);
  return text;
}

test("CopilotKit's stop through its runtime stops relayline's run: cancelled, model stream closed within 1 s, the page's run ends without RUN_ERROR", async (t) => {
  const threadId = newThreadId('stop');
  const page = new Page({ bridge, threadId });
  const { turn, done } = page.sayLive('Tell me a story');
  await waitFor(() => contents(turn.events) >= 2, { what: 'the story to start streaming' });

  const stoppedAt = Date.now();
  page.stop();
  const ended = await done;
  const endedAfter = Date.now() - stoppedAt;
  assert.deepEqual(ended.errors, [], 'CopilotKit reported no error');
  assert.equal(ended.of('RUN_ERROR').length, 0, `events: ${ended.types.join(', ')}`);
  assert.equal(ended.types.at(-1), 'RUN_FINISHED', 'the run ends as CopilotKit ends a user stop');
  assert.ok(ended.types.includes('TEXT_MESSAGE_END'), 'the open message was closed');
  assert.equal(bridge.forwarded(threadId).length, 1, 'one run reached relayline');

  const { page: stored, closedAfter, deltas } = await assertStoppedOnRelayline(threadId, stoppedAt);
  assert.equal(lastAssistantText(page.messages), storedAnswer(stored), 'the page shows what relayline kept');
  t.diagnostic(`measured: runtime stop: page run ended ${endedAfter} ms, model stream closed ${closedAfter.toFixed(0)} ms after; ${deltas}/${STORY_DELTAS} deltas`);

  // The thread takes the next message at once, sent with the stopped answer as the page holds it.
  const next = await page.say('hello after the stop');
  assertSettled(next);
  assert.equal(lastAssistantText(page.messages), 'Hello! hello after the stop');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('a plain @ag-ui/client user stops relayline with RelaylineAgent.abortRun()', async (t) => {
  const threadId = newThreadId('direct-stop');
  const agent = new RelaylineAgent({ url: `${BASE_URL}/agui`, threadId });
  agent.addMessage({ id: `${threadId}-u1`, role: 'user', content: 'Tell me a story' });
  const events = [];
  const run = agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
  await waitFor(() => contents(events) >= 2, { what: 'the story to start streaming' });

  const stoppedAt = Date.now();
  agent.abortRun();
  await run; // resolves: HttpAgent treats its own abort as the end of the run
  assert.equal(events.filter((event) => event.type === 'RUN_ERROR').length, 0);
  assert.equal(agent.isRunning, false);

  const { page: stored, closedAfter, deltas } = await assertStoppedOnRelayline(threadId, stoppedAt);
  const types = events.map((event) => event.type);
  assert.equal(types.at(-1), 'RUN_FINISHED', `events: ${types.join(', ')}`);
  assert.ok(types.includes('TEXT_MESSAGE_END'), 'the open message was closed');
  assert.equal(lastAssistantText(agent.messages), storedAnswer(stored), 'the client shows what relayline kept');
  t.diagnostic(`measured: abortRun: model stream closed ${closedAfter.toFixed(0)} ms after; ${deltas}/${STORY_DELTAS} deltas`);

  agent.addMessage({ id: `${threadId}-u2`, role: 'user', content: 'hello again' });
  const next = [];
  await agent.runAgent({}, { onEvent: ({ event }) => void next.push(event) });
  const nextTypes = next.map((event) => event.type);
  assert.equal(nextTypes.at(-1), 'RUN_FINISHED', `events: ${nextTypes.join(', ')}`);
  assert.equal(lastAssistantText(agent.messages), 'Hello! hello again');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('RelaylineAgent.abortRun() falls back to the fetch abort when the stop request fails', async () => {
  const threadId = newThreadId('stop-fallback');
  const agent = new RelaylineAgent({
    url: `${BASE_URL}/agui`,
    threadId,
    stopUrl: `${BASE_URL}/agent/nobody/stop/${threadId}`, // 404: no such agent
  });
  agent.addMessage({ id: `${threadId}-u1`, role: 'user', content: 'Tell me a story' });
  const events = [];
  const run = agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
  await waitFor(() => contents(events) >= 2, { what: 'the story to start streaming' });
  const failures = [];
  const log = console.error;
  console.error = (...args) => void failures.push(args.join(' '));
  try {
    agent.abortRun();
    await run; // ended by the abort, well before the story's end
  } finally {
    console.error = log;
  }
  assert.deepEqual(failures, ['RelaylineAgent: the stop request answered 404']);
  const errors = events.filter((event) => event.type === 'RUN_ERROR');
  assert.deepEqual(errors.map((event) => event.code), ['abort'], "the client's own report of its abort");
  assert.equal((await threadRun(threadId)).status, 'running', 'a disconnect leaves the run going');

  // Clean up: the worker is shared with the next tests.
  const stop = await fetch(`${BASE_URL}/agui/stop/${threadId}`, { method: 'POST' });
  assert.equal((await stop.json()).stopped, true);
  await waitFor(async () => (await threadRun(threadId)).status === 'cancelled', { what: 'the cleanup stop' });
});
