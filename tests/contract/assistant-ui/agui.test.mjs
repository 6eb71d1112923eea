// assistant-ui's AG-UI runtime (`useAgUiRuntime` with an `HttpAgent` on POST /agui) and
// the history adapter of src/aguiHistory.js over GET /agui/threads/<id>: a reload shows
// the thread as it was, and the reloaded page carries it on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backend, threadRun, useBrowser } from './helpers.mjs';

const { openTab } = useBrowser();

test('the AG-UI runtime with the history adapter: a reload shows the thread, and it carries on', async (t) => {
  const { threadId, tab } = await openTab(t, 'agui', { page: 'agui' });
  await tab.send('hello agui');
  await tab.waitForAnswer('Hello! hello agui');
  await tab.page.locator('#status[data-running="false"]').waitFor();
  await tab.send('Read nothing, hello twice');
  await tab.waitForAnswer('Hello! Read nothing, hello twice');
  await tab.page.locator('#status[data-running="false"]').waitFor();
  const shown = await tab.shown();
  assert.deepEqual(shown, [
    ['user', 'hello agui'],
    ['assistant', 'Hello! hello agui'],
    ['user', 'Read nothing, hello twice'],
    ['assistant', 'Hello! Read nothing, hello twice'],
  ]);

  await tab.goto({ page: 'agui' });
  await tab.waitForAnswer('Hello! Read nothing, hello twice');
  assert.deepEqual(await tab.shown(), shown, 'the reload shows the thread from GET /agui/threads/<id>');

  await tab.send('hello after reload');
  await tab.waitForAnswer('Hello! hello after reload');
  await tab.page.locator('#status[data-running="false"]').waitFor();
  assert.equal((await threadRun(threadId)).status, 'completed');
  const stored = (await backend.aguiThread(threadId)).messages;
  assert.deepEqual(
    stored.map((message) => message.role),
    ['user', 'reasoning', 'assistant', 'user', 'reasoning', 'assistant', 'user', 'reasoning', 'assistant'],
    'each message stored once (each answer: its reasoning, then its text)',
  );
  assert.deepEqual(tab.problems, []);
});
