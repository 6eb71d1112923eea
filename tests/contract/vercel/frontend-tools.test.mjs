// Frontend tools through useChat (reference catalogue J 183, 185): the backend hands a
// call to the page with `tool-input-available`, `onToolCall` starts the handler
// without awaiting it, `addToolOutput` records the result and the step-scoped
// predicate sends it. A handler runs once per call, also across reloads; an eager
// predicate sends results one by one and never twice; long multibyte text survives
// both directions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertCompleted,
  assertSecondCallSaw,
  assertStoredAsShown,
  autoSends,
  modelCalls,
  sentPart,
  storedMessages,
  summarize,
  threadRun,
  useBrowser,
} from './helpers.mjs';
import { LONG_TEXT } from './src/tools.js';

const { openTab } = useBrowser();


test('J183 a frontend handler runs once; its result continues the run; a reload runs nothing again', async (t) => {
  const { threadId, tab } = await openTab(t, 'handler-once');
  await tab.send('Please read the title');

  await tab.waitForAnswer('The title is Quarterly report.');
  await tab.waitForIdle(2);
  await tab.waitForTool('call_v_title', 'output-available');
  assert.equal(await tab.tool('call_v_title').locator('.output').textContent(), 'Quarterly report');
  assert.equal(await tab.tool('call_v_title').getAttribute('data-handler-runs'), '1');

  const probe = await tab.probe();
  assert.deepEqual(probe.handlerRuns, { call_v_title: 1 });
  assert.deepEqual(probe.requests.map((r) => r.status), [200, 200]);
  assert.equal(sentPart(probe.requests[1], 'call_v_title').output, 'Quarterly report');
  assert.deepEqual(autoSends(probe), [['call_v_title:output-available']]);
  // The answer after the result is a new UI step of the same message.
  const [assistant] = probe.state.messages.filter((m) => m.role === 'assistant');
  assert.deepEqual(
    assistant.parts.map((p) => p.type),
    ['tool-read_title', 'step-start', 'text'],
  );

  const first = await tab.firstMessageId();
  await assertSecondCallSaw(threadId, first, [
    { callId: 'call_v_title', name: 'read_title', content: 'Quarterly report', isError: false },
  ]);

  // A reload shows the same conversation and neither runs the handler nor sends.
  const live = summarize(probe.state.messages);
  assert.deepEqual(summarize(await storedMessages(threadId)), live);
  await tab.goto();
  await tab.waitForTool('call_v_title', 'output-available');
  const reloaded = await tab.probe();
  assert.equal(reloaded.chatId, threadId, 'the tab remembers its chat');
  assert.deepEqual(summarize(reloaded.state.messages), live);
  assert.deepEqual(reloaded.handlerRuns, {});
  assert.deepEqual(reloaded.requests, []);
  assert.equal(modelCalls(first).length, 2);
  assert.deepEqual(tab.problems, []);
});

test('J183 partial eager submission: results go out as they come, each once, and the run waits for the rest', async (t) => {
  const { threadId, tab } = await openTab(t, 'eager', { eager: true });
  await tab.send('Run the partial lookups');

  // "one" and "three" answer at once; "two" waits for the user.
  await tab.waitForTool('call_v_one', 'output-available');
  await tab.waitForTool('call_v_three', 'output-available');
  await tab.tool('call_v_two').getByRole('button', { name: 'Release' }).waitFor();
  const earlyResultsSent = () => {
    const { decisions, requests, state } = window.__relayline;
    const sent = decisions.flatMap((d) => d.answers);
    return (
      sent.includes('call_v_one:output-available') &&
      sent.includes('call_v_three:output-available') &&
      requests.every((r) => r.status !== null) &&
      state.finished === requests.length &&
      state.status === 'ready'
    );
  };
  await tab.waitUntil('the early results to be sent', earlyResultsSent);
  const early = await tab.probe();
  assert.ok(early.requests.every((r) => r.status === 200));
  const earlySends = autoSends(early).flat();
  assert.deepEqual(
    [...earlySends].sort(),
    ['call_v_one:output-available', 'call_v_three:output-available'],
    'each early result is sent once',
  );
  for (const request of early.requests.slice(1)) {
    assert.equal(sentPart(request, 'call_v_two').state, 'input-available', 'the held call is not answered');
  }
  await tab.waitForTool('call_v_two', 'input-available');

  // The backend kept the early results and waits only for "two".
  const first = await tab.firstMessageId();
  const waiting = await threadRun(threadId);
  assert.equal(waiting.status, 'suspended');
  assert.deepEqual(waiting.interrupt.toolCalls.map((c) => c.callId), ['call_v_two']);
  assert.equal(modelCalls(first).length, 1);

  await tab.release('call_v_two');
  const expected = { call_v_one: 'found one', call_v_two: 'found two', call_v_three: 'found three' };
  await tab.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'Partial: ' }).waitFor();
  await tab.waitForIdle(early.requests.length + 1);
  const done = await tab.probe();
  assert.deepEqual(autoSends(done).at(-1), ['call_v_two:output-available'], 'only the new result is new');
  assert.equal(done.requests.length, early.requests.length + 1);
  assert.deepEqual(done.handlerRuns, { call_v_one: 1, call_v_two: 1, call_v_three: 1 });
  const answer = await tab.lastAnswer();
  assert.deepEqual(JSON.parse(answer.slice('Partial: '.length)), expected);

  const calls = await assertCompleted(threadId, first, 2);
  assert.deepEqual(
    Object.fromEntries(calls[1].toolResults.map((r) => [r.callId, r.content])),
    expected,
  );
  await assertStoredAsShown(tab, threadId, done);
});

test('J185 a long multibyte result reaches the backend intact and streams back intact', async (t) => {
  const { threadId, tab } = await openTab(t, 'multibyte');
  assert.ok(Buffer.byteLength(LONG_TEXT) > 20_000 && /[\u{1F680}東ü]/u.test(LONG_TEXT));
  await tab.send('Echo a multibyte text');

  await tab.waitForAnswer(`Echo: ${LONG_TEXT}`);
  await tab.waitForIdle(2);
  assert.equal(await tab.tool('call_v_long').locator('.output').textContent(), LONG_TEXT);

  const first = await tab.firstMessageId();
  const calls = await assertCompleted(threadId, first, 2);
  assert.equal(calls[1].toolResults[0].content, LONG_TEXT, 'the model saw the exact text');
  const stored = await storedMessages(threadId);
  const text = stored.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(text, `Echo: ${LONG_TEXT}`);
  assert.deepEqual(summarize(stored), summarize((await tab.probe()).state.messages));
  assert.deepEqual(tab.problems, []);
});
