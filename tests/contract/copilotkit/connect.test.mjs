// Connect mid-run (issue 10, "CopilotKit's connect after a reload mid-run shows the live
// answer"). relayline serves POST /agui/connect: the thread's stored history as one
// snapshot run, then the running AG-UI segment replayed from its RUN_STARTED and
// followed live to its end. Plain HttpAgent leaves connect() unimplemented (connectAgent
// then does nothing) and CopilotKit's default InMemoryAgentRunner replays only what its
// own process saw; RelaylineAgent.connect() (web/static/relayline-agent.js) asks
// relayline, and bridge.mjs's RelaylineAgentRunner serves the runtime's connect route
// from it. Both scenarios use the "story" rule: 405 deltas 50 ms apart (about 20 s).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../shared/stack.mjs';
import { RelaylineAgent } from './relayline-agent.mjs';
import {
  BASE_URL,
  Page,
  assertSettled,
  lastAssistantText,
  newThreadId,
  reload,
  modelStream,
  startBridge,
  threadRun,
} from './helpers.mjs';

/** The whole answer of the story rule (tests/contract/copilotkit_agent.py, STORY_TEXT). */
const STORY_TEXT = 'Once upon a time, '.repeat(360);
/** ms a connect may take to follow the story to its end on a loaded machine */
const CONNECT_TIMEOUT_MS = 90_000;

const contents = (events) => events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT');

/** [id, role, content] of the user, assistant and tool messages, in order. */
const identities = (messages) =>
  messages
    .filter((m) => m.role === 'user' || m.role === 'assistant' || m.role === 'tool')
    .map((m) => [m.id, m.role, m.content ?? '']);

function assertNoDuplicates(messages) {
  const ids = messages.map((m) => m.id);
  assert.deepEqual(ids, [...new Set(ids)], `duplicated message ids: ${ids.join(', ')}`);
}

/** `promise`, or a rejection naming `what` after `ms`. */
async function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

test('@ag-ui/client: a fresh RelaylineAgent whose connectAgent() joins a running thread gets the history and the live answer to its end, nothing duplicated', async () => {
  const threadId = newThreadId('connect-agui');
  const url = `${BASE_URL}/agui`;
  const runner = new RelaylineAgent({ url, threadId });
  runner.addMessage({ id: `${threadId}-u1`, role: 'user', content: 'Tell me a story' });
  const seen = [];
  const running = runner.runAgent({}, { onEvent: ({ event }) => void seen.push(event) });
  running.catch(() => {}); // awaited below; a failure shows there
  let runEnded = false;
  running.finally(() => {
    runEnded = true;
  });
  await waitFor(() => contents(seen).length >= 2, { what: 'the story to start streaming' });

  // Another tab (or the same page after a reload): an agent that knows only the thread id.
  const viewer = new RelaylineAgent({ url, threadId });
  assert.equal(viewer.connectEndpoint(), `${BASE_URL}/agui/connect`);
  const received = [];
  let live = 0; // answer deltas the viewer applied while the original run still streamed
  const connected = viewer.connectAgent({}, {
    onEvent: ({ event }) => {
      received.push(event);
      if (event.type === 'TEXT_MESSAGE_CONTENT' && !runEnded) live += 1;
    },
  });
  await within(connected, CONNECT_TIMEOUT_MS, 'connectAgent()');
  await within(running, CONNECT_TIMEOUT_MS, 'the original run');
  assert.ok(live > 2, `only ${live} deltas reached the viewer while the run streamed`);

  // One snapshot run (the stored history), then the running segment from its start.
  const types = received.map((event) => event.type);
  assert.deepEqual(types.slice(0, 4), ['RUN_STARTED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED', 'RUN_STARTED']);
  assert.equal(types.at(-1), 'RUN_FINISHED');
  assert.equal(received.filter((event) => event.type === 'RUN_ERROR').length, 0);
  const snapshot = received[1].messages;
  assert.deepEqual(
    identities(snapshot),
    [[`${threadId}-u1`, 'user', 'Tell me a story']],
    'the snapshot holds the history without the running answer',
  );
  assert.equal(
    contents(received).map((event) => event.delta).join(''),
    STORY_TEXT,
    'the viewer received the whole answer, replayed then live',
  );
  assert.equal(lastAssistantText(viewer.messages), STORY_TEXT);
  assert.equal(viewer.isRunning, false);

  // What the viewer holds is what relayline stored, each message once.
  const stored = await reload(threadId);
  assert.equal((await threadRun(threadId)).status, 'completed');
  assertNoDuplicates(viewer.messages);
  assert.deepEqual(identities(viewer.messages), identities(stored.messages));
  assert.deepEqual(identities(viewer.messages), identities(runner.messages));

  // Once nothing runs, a connect brings the history alone (one snapshot run).
  const later = new RelaylineAgent({ url, threadId });
  const again = [];
  await within(later.connectAgent({}, { onEvent: ({ event }) => void again.push(event) }), 30_000, 'a later connect');
  assert.deepEqual(
    again.map((event) => event.type),
    ['RUN_STARTED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED'],
  );
  assert.deepEqual(identities(later.messages), identities(stored.messages));

  // clone() (what a CopilotKit runtime runs per request) keeps the connect route.
  const routed = new RelaylineAgent({ url, threadId, connectUrl: `${BASE_URL}/agent/default/connect` });
  assert.equal(routed.clone().connectEndpoint(), `${BASE_URL}/agent/default/connect`);
  assert.equal(new RelaylineAgent({ url: `${BASE_URL}/agent/default`, threadId }).connectEndpoint(), `${BASE_URL}/agent/default/connect`);
});

test("CopilotKit: a page reloaded mid-run onto a fresh runtime process connects through RelaylineAgentRunner and shows the live answer to its end", async () => {
  const threadId = newThreadId('connect-ck');
  const oldBridge = await startBridge();
  let newBridge;
  try {
    const first = new Page({ bridge: oldBridge, threadId });
    const { turn, done } = first.sayLive('Tell me a story');
    await waitFor(() => contents(turn.events).length >= 2, { what: 'the story to start streaming' });

    // The user reloads: the browser drops the old page's request (its fetch aborted,
    // no stop posted), and the reload lands on another runtime process: the old one is
    // gone (a deploy, a crash, another replica), so nothing of this thread is in the
    // new one's memory.
    first.agent.abortController.abort();
    await within(done, 30_000, "the old page's run");
    await oldBridge.stop();
    newBridge = await startBridge({ connect: 'relayline' });
    assert.equal((await threadRun(threadId)).status, 'running', 'the worker goes on without the old runtime');

    const reloaded = new Page({ bridge: newBridge, threadId });
    const arrivals = []; // wall-clock ms of each answer delta the reloaded page applied
    reloaded.agent.subscribe({ onTextMessageContentEvent: () => void arrivals.push(Date.now()) });
    const opened = await within(reloaded.open(), CONNECT_TIMEOUT_MS, "the page's connect");
    assert.deepEqual(opened.errors, []);
    assertSettled(opened);
    assert.deepEqual(
      newBridge.forwarded(threadId).map((request) => [new URL(request.url).pathname, request.status]),
      [['/agui/connect', 200]],
      "the runtime's connect asked relayline",
    );
    const shown = contents(opened.events).map((event) => event.delta).join('');
    assert.equal(shown, STORY_TEXT, 'the page showed the whole answer, replayed then live');
    assert.equal(lastAssistantText(reloaded.messages), STORY_TEXT);
    // Live, not a replay after the fact: deltas reached the page before the worker's
    // model stream handed over its last one (same machine, same clock).
    const lastModelDelta = Math.max(...modelStream(threadId).deltas.map((delta) => delta.at));
    const live = arrivals.filter((at) => at < lastModelDelta).length;
    assert.ok(live > 10, `only ${live} of ${arrivals.length} deltas reached the page while the model streamed`);

    // The run ended while the page was connected: what it shows is what relayline stored.
    const stored = await reload(threadId);
    assert.equal((await threadRun(threadId)).status, 'completed');
    assertNoDuplicates(reloaded.messages);
    assert.deepEqual(identities(reloaded.messages), identities(stored.messages));
    assert.deepEqual(identities(reloaded.messages).map(([, role]) => role), ['user', 'assistant']);
  } finally {
    await oldBridge.stop();
    await newBridge?.stop();
  }
});
