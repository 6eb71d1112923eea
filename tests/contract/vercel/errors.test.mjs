// Failures as a useChat user sees them (reference catalogue J 186). Before any header
// the backend answers a JSON error with its HTTP status: `DefaultChatTransport` throws
// it and the chat's status is `error`. After the headers a failure is the stream's
// `error` part with neutral text: the chat's status is `error` too, the partial answer
// stays on screen, and the run is recorded as failed. Neither locks the thread.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertStoredAsShown,
  backendRuns,
  modelCalls,
  storedMessages,
  threadRun,
  useBrowser,
} from './helpers.mjs';

const { openTab } = useBrowser();


test('J186 an error before headers (409) is a chat error; the pending approval is unharmed', async (t) => {
  const { threadId, tab } = await openTab(t, 'refused');
  await tab.send('Please delete the draft');
  await tab.waitForTool('call_v_draft', 'approval-requested');
  await tab.waitForIdle(1);
  const first = await tab.firstMessageId();
  const before = await threadRun(threadId);

  // A new message while the approval is pending is refused before any header.
  await tab.send('hello while waiting');
  await tab.waitForIdle(2, 'error');
  const alert = tab.page.getByRole('alert');
  assert.equal(await alert.getAttribute('data-http-status'), '409');
  const refusal = /^Thread '.+' is busy: run '.+' \(attempt \d+\) waits for an answer\. .*multitask=enqueue/;
  assert.match(await alert.locator('p').textContent(), refusal);
  const refused = await tab.probe();
  assert.deepEqual(refused.requests.map((r) => r.status), [200, 409]);
  assert.deepEqual(
    refused.state.messages.map((m) => m.role),
    ['user', 'assistant', 'user'],
    'the unsent message is still on screen',
  );

  // The backend recorded nothing for the refused message.
  const after = await threadRun(threadId);
  assert.deepEqual(after, before, 'same run, same attempt, same interrupt');
  assert.equal(modelCalls(first).length, 1);
  assert.deepEqual(
    (await storedMessages(threadId)).map((m) => m.role),
    ['user', 'assistant'],
  );

  // The user takes the message back and answers the approval: the run continues.
  await alert.getByRole('button', { name: 'Dismiss' }).click();
  await tab.page.locator('#status[data-status="ready"]').waitFor();
  await tab.approve('call_v_draft');
  await tab.waitForAnswer('I need your approval to delete it.Done: draft.txt deleted');
  await tab.waitForIdle(3);
  const done = await tab.probe();
  assert.deepEqual(done.requests.map((r) => r.status), [200, 409, 200]);
  assert.equal(done.state.error, null);
  assert.equal((await threadRun(threadId)).status, 'completed');
  assert.equal(backendRuns('delete_file', { path: 'draft.txt' }).length, 1);
  assert.equal(modelCalls(first).length, 2);
  await assertStoredAsShown(tab, threadId, done);
});

test('J186 an error after headers: the error part sets status error saying the provider failed; the next message works', async (t) => {
  const { threadId, tab } = await openTab(t, 'failed');
  await tab.send('Please fail after text');

  await tab.waitForIdle(1, 'error');
  const alert = tab.page.getByRole('alert');
  assert.equal(await alert.locator('p').textContent(), 'The model provider failed to answer: try again in a moment.');
  assert.equal(await alert.getAttribute('data-http-status'), '', 'not an HTTP error');
  assert.equal(await tab.lastAnswer(), 'Partial answer that never completes.', 'the partial answer stays');
  const html = await tab.page.content();
  assert.ok(!html.includes('upstream exploded'), 'no internal detail reaches the page');
  const failed = await tab.probe();
  assert.deepEqual(failed.requests.map((r) => r.status), [200]);

  const first = await tab.firstMessageId();
  assert.equal((await threadRun(threadId)).status, 'failed');
  assert.equal(modelCalls(first).length, 1);
  assert.deepEqual(
    (await storedMessages(threadId)).map((m) => m.role),
    ['user'],
    'the half-streamed answer is not in history',
  );

  await tab.send('hello again');
  await tab.waitForAnswer('Hello! hello again');
  await tab.waitForIdle(2);
  const done = await tab.probe();
  assert.equal(done.state.error, null);
  assert.equal(await tab.page.getByRole('alert').count(), 0);
  assert.deepEqual(done.requests.map((r) => r.status), [200, 200]);
  assert.equal((await threadRun(threadId)).status, 'completed');
  assert.equal(modelCalls(first).length, 2);
  assert.deepEqual(tab.problems, []);
});
