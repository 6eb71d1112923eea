// Stop (issue 11): the page's Stop button does what the AI SDK's docs ask of a
// resumable setup: POST /api/chat/<id>/stop, then `stop()` (which alone only aborts
// this page's fetch: a disconnect, after which the run would go on). The worker must
// stop calling the model within 1 s of the click, the page leave "streaming", the run
// end `cancelled`, and a reload show the partial answer as stopped (GET /api/chat/<id>
// `metadata.stopped`); the thread then takes the next message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modelStream, storedMessages, threadRun, useBrowser, waitFor } from './helpers.mjs';

/** The whole answer of the stop scenario (tests/contract/vercel_agent.py, STORY_TEXT). */
const STORY_TEXT = 'Once upon a time, '.repeat(360);
/** Its deltas: the test agent streams it in chunks of 16 characters. */
const STORY_DELTAS = Math.ceil(STORY_TEXT.length / 16);
/** The bound: no model delta later than this after the click. */
const STOP_WITHIN_MS = 1000;

const { openTab } = useBrowser();

test('Stop mid-answer: the worker stops within 1 s, the page leaves streaming, the reload shows the answer stopped', async (t) => {
  const { threadId, tab } = await openTab(t, 'stop');
  await tab.send('Tell me a story');
  await tab.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'Once upon a time,' }).waitFor();
  await tab.page.locator('#status[data-status="streaming"]').waitFor();
  const first = await tab.firstMessageId();

  await tab.page.getByRole('button', { name: 'Stop', exact: true }).click();
  await tab.page.locator('#status[data-status="ready"]').waitFor();
  const shown = await tab.lastAnswer();
  const probe = await tab.probe();
  assert.equal(probe.stops.length, 1, 'one click, one stop request');
  const clickedAt = probe.stops[0].at; // the page's clock: the same host as the worker's
  assert.equal(probe.state.error, null, 'a stop is not an error');
  assert.ok(shown.length > 0 && STORY_TEXT.startsWith(shown), `the page kept what it read (${shown.length} chars)`);

  const answered = await tab.waitUntil(
    'the stop request answered',
    () => window.__relayline.stops[0].status !== null,
  ).then(() => tab.probe());
  assert.deepEqual(answered.stops[0].answer, { success: true, stopped: true });
  assert.equal(answered.stops[0].status, 200);

  // The run ends cancelled only after the loop closed the model stream, so from then on
  // the delta log is final: a bounded wait, then the timestamps say when it stopped.
  await waitFor(async () => (await threadRun(threadId))?.status === 'cancelled', {
    what: 'the run to end cancelled',
  });
  const { deltas, closed } = modelStream(first);
  assert.equal(closed.length, 1, 'the loop closed the model stream mid-answer');
  const closedAfter = closed[0].at - clickedAt;
  const lastDeltaAfter = Math.max(...deltas.map((delta) => delta.at)) - clickedAt;
  assert.ok(closedAfter <= STOP_WITHIN_MS, `model stream closed ${closedAfter.toFixed(0)} ms after the click`);
  assert.ok(lastDeltaAfter <= STOP_WITHIN_MS, `a delta came ${lastDeltaAfter.toFixed(0)} ms after the click`);
  assert.ok(deltas.length < STORY_DELTAS / 4, `${deltas.length} of ${STORY_DELTAS} deltas were streamed`);
  const answeredAfter = answered.stops[0].answeredAt - clickedAt;
  t.diagnostic(
    `measured: stop answered ${answeredAfter} ms, model stream closed ${closedAfter.toFixed(0)} ms after the click; ` +
      `${deltas.length}/${STORY_DELTAS} deltas`,
  );

  // The stored answer holds at least what the page showed, and says it was stopped.
  const stored = (await storedMessages(threadId)).at(-1);
  assert.equal(stored.role, 'assistant');
  assert.deepEqual(stored.metadata, { stopped: true });
  const storedText = stored.parts.filter((part) => part.type === 'text').map((part) => part.text).join('');
  assert.ok(storedText.startsWith(shown) && storedText.length < STORY_TEXT.length, `stored ${storedText.length} chars`);

  await tab.goto({ thread: threadId });
  const reloaded = tab.page.locator('.msg[data-role="assistant"]').last();
  await reloaded.locator('p.stopped', { hasText: 'Stopped' }).waitFor();
  assert.equal(await reloaded.getAttribute('data-stopped'), 'true');
  assert.equal(await tab.lastAnswer(), storedText, 'the reload shows the partial answer');
  assert.deepEqual((await tab.probe()).requests, [], 'loading history sends nothing');

  await tab.send('hello after the stop');
  await tab.waitForAnswer('Hello! hello after the stop');
  await tab.waitForIdle(1);
  assert.equal((await threadRun(threadId)).status, 'completed');
  const done = await tab.probe();
  assert.deepEqual(done.requests.map((request) => request.status), [200]);
  assert.deepEqual(done.state.messages.map((message) => message.role), ['user', 'assistant', 'user', 'assistant']);
  assert.deepEqual(tab.problems, []);
});
