// Leaving and coming back (reference catalogue J 183, 184): the page keeps its chat id
// in sessionStorage and rebuilds the conversation from GET /api/chat/<id>, so a reload
// during an approval shows the same `approval-requested` part and the decision
// continues the run; a tab closed mid-answer loses only its stream (the worker owns
// the run) and the thread takes the next message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ChatTab,
  assertSecondCallSaw,
  assertStoredAsShown,
  autoSends,
  modelCalls,
  newThreadId,
  sentPart,
  summarize,
  threadRun,
  useBrowser,
  waitFor,
} from './helpers.mjs';

/** The whole answer of the slow scenario (tests/contract/vercel_agent.py, SLOW_TEXT). */
const SLOW_TEXT = 'A slow answer. '.repeat(60);

const { newContext } = useBrowser();


test('J183 a reload from session storage restores approval-requested, and approving continues the run', async (t) => {
  const context = await newContext(t);
  const threadId = newThreadId('reload');
  const tab = await ChatTab.open(context, { thread: threadId });
  await tab.send('Reload approval: open the settings');
  await tab.waitForTool('call_v_settings', 'approval-requested');
  await tab.waitForIdle(1);
  const live = summarize((await tab.probe()).state.messages);
  const first = await tab.firstMessageId();

  // The same tab, without the thread in the URL: the chat id comes from sessionStorage.
  await tab.goto();
  await tab.waitForTool('call_v_settings', 'approval-requested');
  const reloaded = await tab.probe();
  assert.equal(reloaded.chatId, threadId);
  assert.deepEqual(summarize(reloaded.state.messages), live, 'the reload shows what the live page held');
  assert.deepEqual(reloaded.requests, [], 'loading history sends nothing');
  assert.equal((await threadRun(threadId)).status, 'suspended');

  await tab.approve('call_v_settings');
  await tab.waitForAnswer('Approval needed to open settings.Opened after reload: settings opened');
  await tab.waitForIdle(2);
  await tab.waitForTool('call_v_settings', 'output-available');

  const done = await tab.probe();
  assert.deepEqual(done.handlerRuns, { call_v_settings: 1 }, 'the reloaded page runs the handler once');
  assert.deepEqual(done.requests.map((r) => r.status), [200, 200]);
  assert.equal(sentPart(done.requests[0], 'call_v_settings').state, 'approval-responded');
  assert.equal(sentPart(done.requests[1], 'call_v_settings').output, 'settings opened');
  assert.deepEqual(autoSends(done), [
    ['call_v_settings:approval:true'],
    ['call_v_settings:output-available'],
  ]);
  assert.equal(done.state.messages.filter((m) => m.role === 'assistant').length, 1);

  await assertSecondCallSaw(threadId, first, [
    { callId: 'call_v_settings', name: 'browser', content: 'settings opened', isError: false },
  ]);
  await assertStoredAsShown(tab, threadId, done);
});

test('J184 a tab closed mid-stream does not lock the thread: the run completes and the next message works', async (t) => {
  const context = await newContext(t);
  const threadId = newThreadId('closed');
  const closing = await ChatTab.open(context, { thread: threadId });
  await closing.send('Give me a slow answer');
  await closing.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'A slow answer.' }).waitFor();
  const seen = await closing.lastAnswer();
  const first = await closing.firstMessageId();
  await closing.close();
  assert.ok(seen.length < SLOW_TEXT.length, `closed mid-answer (${seen.length} chars seen)`);
  assert.ok(SLOW_TEXT.startsWith(seen));
  assert.deepEqual(closing.problems, []);

  const run = await waitFor(
    async () => {
      const current = await threadRun(threadId);
      return current?.status === 'completed' && current;
    },
    { what: 'the run to complete in the worker' },
  );
  assert.equal(run.status, 'completed');
  assert.equal(modelCalls(first).length, 1);

  const tab = await ChatTab.open(context, { thread: threadId });
  await tab.waitForAnswer(SLOW_TEXT);
  await tab.send('hello after closing');
  await tab.waitForAnswer('Hello! hello after closing');
  await tab.waitForIdle(1);
  const probe = await tab.probe();
  assert.deepEqual(probe.requests.map((r) => r.status), [200]);
  assert.equal(probe.state.error, null);
  assert.deepEqual(
    probe.state.messages.map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.equal((await threadRun(threadId)).status, 'completed');
  assert.equal(modelCalls(first).length, 2);
  await assertStoredAsShown(tab, threadId, probe);
});

/** The whole answer of the resume scenario (tests/contract/vercel_agent.py, LONG_TEXT). */
const LONG_TEXT = 'A long answer. '.repeat(340);

test('useChat({ resume: true }) reloaded mid-answer continues the same message from the segment log', async (t) => {
  const context = await newContext(t);
  const threadId = newThreadId('resume');
  const tab = await ChatTab.open(context, { thread: threadId, resume: true });
  // useChat asks on mount; wait for that answer rather than racing it.
  await tab.waitUntil('the resume request on load answered', () =>
    window.__relayline?.resumes.some((r) => r.status !== null),
  );
  const opened = await tab.probe();
  assert.deepEqual(opened.resumes.map((r) => r.status), [204], 'a new chat has nothing to resume');

  await tab.send('Give me a long answer');
  await tab.page.locator('.msg[data-role="assistant"] p.text', { hasText: 'A long answer.' }).waitFor();
  const seen = await tab.lastAnswer();
  assert.ok(seen.length < LONG_TEXT.length, `reloaded mid-answer (${seen.length} chars seen)`);

  await tab.goto({ thread: threadId, resume: true }); // the user reloads the page
  await tab.waitForAnswer(LONG_TEXT);
  await tab.waitForIdle(1);
  const done = await tab.probe();
  assert.deepEqual(done.resumes.map((r) => r.status), [200], 'the reload resumed the live answer');
  assert.deepEqual(done.requests, [], 'resuming sends no chat request');
  const answers = done.state.messages.filter((m) => m.role === 'assistant');
  assert.equal(answers.length, 1, 'one assistant message, not a second copy');
  assert.equal(await tab.lastAnswer(), LONG_TEXT, 'every chunk once, in order');
  assert.equal((await threadRun(threadId)).status, 'completed');
  await assertStoredAsShown(tab, threadId, done);
});
