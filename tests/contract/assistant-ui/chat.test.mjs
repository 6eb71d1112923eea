// assistant-ui over its AI SDK runtime, one thread through: a plain answer, a backend
// tool behind an approval (assistant-ui's `respondToApproval`), a frontend tool run by
// the page's toolkit, and a reload that shows the same thread from GET /api/chat/<id>
// (the history recipe) without sending anything or running a tool again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backend, storedMessages, threadRun, useBrowser } from './helpers.mjs';

const { openTab } = useBrowser();

test('send, a backend tool behind an approval, a frontend tool, then a reload shows the same thread', async (t) => {
  const { threadId, tab } = await openTab(t, 'chat');

  await tab.send('hello there');
  await tab.waitForAnswer('Hello! hello there');
  await tab.waitForIdle();

  await tab.send('Delete the report');
  const card = tab.tool('call_v_delete');
  await card.and(tab.page.locator('[data-approval="requested"]')).waitFor();
  assert.equal((await threadRun(threadId)).status, 'suspended', 'the run waits for the decision');
  assert.deepEqual(backend.toolRuns('delete_file', { path: 'report.pdf' }), [], 'nothing ran before the approval');
  await card.getByRole('button', { name: 'Approve' }).click();
  await tab.waitForAnswer('I need your approval to delete it.Done: report.pdf deleted');
  await tab.waitForIdle();
  assert.equal(await card.getAttribute('data-result'), 'report.pdf deleted');
  assert.equal(await card.getAttribute('data-approval'), 'true');
  assert.equal(backend.toolRuns('delete_file', { path: 'report.pdf' }).length, 1, 'the backend tool ran once');

  await tab.send('Read the title');
  await tab.waitForAnswer('The title is Quarterly report.');
  await tab.waitForIdle();
  assert.equal(await tab.tool('call_v_title').getAttribute('data-result'), 'Quarterly report');
  assert.equal((await threadRun(threadId)).status, 'completed');

  const live = await tab.probe();
  assert.deepEqual(
    live.requests.map((request) => [request.trigger, request.status]),
    [
      ['submit-message', 200], // hello
      ['submit-message', 200], // delete: ends at the approval
      ['submit-message', 200], // the decision (sendAutomaticallyWhen)
      ['submit-message', 200], // read the title
      ['submit-message', 200], // its result
    ],
  );
  assert.equal(live.state.error, null);
  const shown = await tab.shown();
  assert.deepEqual(
    shown.map(([role]) => role),
    ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
  );

  // The user reloads: the thread comes back from relayline, as it was shown.
  const stored = await storedMessages(threadId);
  await tab.goto();
  await tab.waitForAnswer('The title is Quarterly report.');
  assert.deepEqual(await tab.shown(), shown, 'the reload shows what the live page showed');
  assert.equal(await tab.tool('call_v_delete').getAttribute('data-result'), 'report.pdf deleted');
  assert.equal(await tab.tool('call_v_delete').getAttribute('data-approval'), 'true');
  assert.equal(await tab.tool('call_v_title').getAttribute('data-result'), 'Quarterly report');
  await tab.waitForIdle();
  const reloaded = await tab.probe();
  assert.deepEqual(reloaded.requests, [], 'loading history sends nothing (no tool runs again)');
  assert.deepEqual(await storedMessages(threadId), stored);
  assert.equal(backend.toolRuns('delete_file', { path: 'report.pdf' }).length, 1);

  // and the reloaded page carries on the thread
  await tab.send('hello again');
  await tab.waitForAnswer('Hello! hello again');
  await tab.waitForIdle();
  assert.deepEqual((await tab.probe()).requests.map((request) => request.status), [200]);
  assert.deepEqual(tab.problems, []);
});
