// Stop in assistant-ui: its Stop button (`ComposerPrimitive.Cancel`) only aborts the
// request, which relayline takes as a disconnect and lets the run go on. Either recipe
// of src/relayline.js makes the run end `cancelled`: the Stop wrapper that POSTs
// /api/chat/<id>/stop (`stop: 'route'`), or `?onDisconnect=cancel` on the chat requests
// (`stop: 'disconnect'`). A page that resumes (`resume: true`, default onDisconnect)
// loses nothing when it is reloaded mid-answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstMessageId, modelStream, storedMessages, textOf, threadRun, useBrowser, waitForRun } from './helpers.mjs';

/** The whole answer of the stop scenario (tests/contract/vercel_agent.py, STORY_TEXT). */
const STORY_TEXT = 'Once upon a time, '.repeat(360);
const STORY_DELTAS = Math.ceil(STORY_TEXT.length / 16);
/** The answer of the resume scenario (LONG_TEXT). */
const LONG_TEXT = 'A long answer. '.repeat(340);
/** No model delta later than this after the click. */
const STOP_WITHIN_MS = 1000;

const { openTab } = useBrowser();

/** Send the story, click Stop mid-answer: the first message id, the click time and what the page kept. */
async function stopMidStory(tab) {
  await tab.send('Tell me a story');
  await tab.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'Once upon a time,' }).waitFor();
  const first = await firstMessageId(tab);
  const clickedAt = Date.now(); // the same host as the worker's clock
  await tab.stop();
  await tab.waitForIdle();
  return { first, clickedAt, shown: await tab.lastAnswer() };
}

/** The model stream was closed within STOP_WITHIN_MS of the click; the run is cancelled. */
async function assertStopped(t, threadId, first, clickedAt, label) {
  await waitForRun(threadId, 'cancelled');
  const { deltas, closed } = modelStream(first);
  assert.equal(closed.length, 1, 'the loop closed the model stream mid-answer');
  const closedAfter = closed[0].at - clickedAt;
  const lastDeltaAfter = Math.max(...deltas.map((delta) => delta.at)) - clickedAt;
  assert.ok(closedAfter <= STOP_WITHIN_MS, `model stream closed ${closedAfter.toFixed(0)} ms after the click`);
  assert.ok(lastDeltaAfter <= STOP_WITHIN_MS, `a delta came ${lastDeltaAfter.toFixed(0)} ms after the click`);
  assert.ok(deltas.length < STORY_DELTAS / 4, `${deltas.length} of ${STORY_DELTAS} deltas were streamed`);
  t.diagnostic(`measured: ${label}: model stream closed ${closedAfter.toFixed(0)} ms after the click`);
}

test("Stop with the stop wrapper: the run ends cancelled, a reload shows the partial answer stopped", async (t) => {
  const { threadId, tab } = await openTab(t, 'stop-route', { stop: 'route' });
  const { first, clickedAt, shown } = await stopMidStory(tab);
  assert.ok(shown.length > 0 && STORY_TEXT.startsWith(shown), `the page kept what it read (${shown.length} chars)`);
  await tab.waitUntil('the stop request answered', () => window.__relayline.stops[0]?.status !== null && window.__relayline.stops[0]?.status !== undefined);
  const probe = await tab.probe();
  assert.equal(probe.stops.length, 1, 'one click, one stop request');
  assert.equal(probe.stops[0].status, 200);
  assert.deepEqual(probe.stops[0].answer, { success: true, stopped: true });
  await assertStopped(t, threadId, first, clickedAt, 'stop wrapper');

  const stored = (await storedMessages(threadId)).at(-1);
  assert.deepEqual(stored.metadata, { stopped: true });
  assert.ok(textOf(stored).startsWith(shown) && textOf(stored).length < STORY_TEXT.length);
  await tab.goto({ stop: 'route' });
  await tab.waitForAnswer(textOf(stored));
  await tab.send('hello after the stop');
  await tab.waitForAnswer('Hello! hello after the stop');
  await tab.waitForIdle();
  assert.equal((await threadRun(threadId)).status, 'completed');
  assert.deepEqual(tab.problems, []);
});

test('Stop with ?onDisconnect=cancel: the aborted request alone ends the run cancelled', async (t) => {
  const { threadId, tab } = await openTab(t, 'stop-drop', { stop: 'disconnect' });
  const { first, clickedAt, shown } = await stopMidStory(tab);
  assert.ok(shown.length > 0 && STORY_TEXT.startsWith(shown));
  const probe = await tab.probe();
  assert.deepEqual(probe.stops, [], 'no stop request: the disconnect is the stop');
  assert.match(probe.requests[0].url, /onDisconnect=cancel/);
  await assertStopped(t, threadId, first, clickedAt, 'onDisconnect=cancel');
  await tab.send('hello after the drop');
  await tab.waitForAnswer('Hello! hello after the drop');
  await tab.waitForIdle();
  assert.deepEqual(tab.problems, []);
});

test('a resuming page reloaded mid-answer keeps its run: the answer continues to its end', async (t) => {
  const { threadId, tab } = await openTab(t, 'resume', { resume: true });
  await tab.waitUntil('the resume request on load answered', () => window.__relayline?.resumes.some((r) => r.status !== null));
  assert.deepEqual((await tab.probe()).resumes.map((r) => r.status), [204], 'a new thread has nothing to resume');
  await tab.send('Give me a long answer');
  await tab.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'A long answer.' }).waitFor();
  const seen = await tab.lastAnswer();
  assert.ok(seen.length < LONG_TEXT.length, `reloaded mid-answer (${seen.length} chars seen)`);

  await tab.goto({ resume: true });
  await tab.waitForAnswer(LONG_TEXT);
  await tab.waitForIdle();
  const done = await tab.probe();
  assert.deepEqual(done.resumes.map((r) => r.status), [200], 'the reload resumed the live answer');
  assert.deepEqual(done.requests, [], 'resuming sends no chat request');
  assert.deepEqual((await tab.shown()).map(([role]) => role), ['user', 'assistant'], 'one answer, not a second copy');
  assert.equal((await threadRun(threadId)).status, 'completed');
  assert.equal(textOf((await storedMessages(threadId)).at(-1)), LONG_TEXT);
  assert.deepEqual(tab.problems, []);
});
