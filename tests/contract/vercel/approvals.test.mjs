// Approvals through useChat (reference catalogue J 183): `addToolApprovalResponse`
// marks the part `approval-responded`, the step-scoped predicate sends it once, and
// the backend continues the same UI message: a backend tool runs on the server, a
// frontend tool is dispatched to the page only now, a rejection ends as `output-denied`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertCompleted,
  assertSecondCallSaw,
  assertStoredAsShown,
  autoSends,
  backendRuns,
  modelCalls,
  sentPart,
  threadRun,
  useBrowser,
} from './helpers.mjs';

const { openTab } = useBrowser();


test('J183 approve a backend tool: one decision sent, the tool runs once, the answer continues the message', async (t) => {
  const { threadId, tab } = await openTab(t, 'approve-backend');
  await tab.send('Please delete the report');

  await tab.waitForTool('call_v_delete', 'approval-requested');
  await tab.waitForIdle(1);
  const card = tab.tool('call_v_delete');
  assert.equal(await card.locator('.input').textContent(), '{"path":"report.pdf"}');
  assert.equal(await tab.lastAnswer(), 'I need your approval to delete it.');
  const first = await tab.firstMessageId();
  const waiting = await threadRun(threadId);
  assert.equal(waiting.status, 'suspended');
  assert.deepEqual(waiting.interrupt.actions.map((a) => [a.id, a.decision]), [['call_v_delete', null]]);
  assert.equal(await card.locator('.request-reason').textContent(), waiting.interrupt.message);
  const deletions = () => backendRuns('delete_file', { path: 'report.pdf' }).length;
  assert.equal(deletions(), 0, 'nothing runs before the decision');
  assert.equal(modelCalls(first).length, 1);

  await tab.approve('call_v_delete');
  await tab.waitForAnswer('I need your approval to delete it.Done: report.pdf deleted');
  await tab.waitForIdle(2);
  await tab.waitForTool('call_v_delete', 'output-available');
  assert.equal(await card.locator('.output').textContent(), 'report.pdf deleted');

  const probe = await tab.probe();
  assert.deepEqual(probe.requests.map((r) => r.status), [200, 200]);
  const decision = probe.requests[1];
  assert.equal(decision.trigger, 'submit-message');
  assert.equal(decision.messages.at(-1).role, 'assistant');
  assert.equal(sentPart(decision, 'call_v_delete').state, 'approval-responded');
  assert.deepEqual(autoSends(probe), [['call_v_delete:approval:true']]);
  const roles = probe.state.messages.map((m) => m.role);
  assert.deepEqual(roles, ['user', 'assistant'], 'one UI message per turn');

  const calls = await assertCompleted(threadId, first, 2);
  assert.equal(deletions(), 1);
  assert.deepEqual(calls[1].toolResults, [
    { callId: 'call_v_delete', name: 'delete_file', content: 'report.pdf deleted', isError: false },
  ]);
  await assertStoredAsShown(tab, threadId, probe);
});

test('J183 approve a frontend tool: dispatched only once approved, while the run waits; its handler runs once', async (t) => {
  const { threadId, tab } = await openTab(t, 'approve-frontend');
  await tab.send('Please open the docs');

  await tab.waitForTool('call_v_docs', 'approval-requested');
  await tab.waitForIdle(1);
  assert.deepEqual(await tab.handlerRuns(), {}, 'no handler runs before the approval');

  // Approved, the call is handed to the page; the run now waits for its result.
  await tab.approve('call_v_docs');
  await tab.tool('call_v_docs').getByRole('button', { name: 'Release' }).waitFor();
  await tab.waitForTool('call_v_docs', 'input-available');
  await tab.waitForIdle(2);
  const first = await tab.firstMessageId();
  const waiting = await threadRun(threadId);
  assert.equal(waiting.status, 'suspended');
  assert.deepEqual(waiting.interrupt.toolCalls.map((c) => c.callId), ['call_v_docs']);
  assert.equal(modelCalls(first).length, 1);

  await tab.release('call_v_docs');
  await tab.waitForAnswer('May I open the docs?Opened: docs opened');
  await tab.waitForIdle(3);
  await tab.waitForTool('call_v_docs', 'output-available');
  assert.equal(await tab.tool('call_v_docs').getAttribute('data-handler-runs'), '1');

  const probe = await tab.probe();
  assert.deepEqual(probe.handlerRuns, { call_v_docs: 1 });
  assert.deepEqual(probe.requests.map((r) => r.status), [200, 200, 200]);
  assert.equal(sentPart(probe.requests[1], 'call_v_docs').state, 'approval-responded');
  const result = sentPart(probe.requests[2], 'call_v_docs');
  assert.equal(result.state, 'output-available');
  assert.equal(result.output, 'docs opened');
  assert.deepEqual(autoSends(probe), [['call_v_docs:approval:true'], ['call_v_docs:output-available']]);

  await assertSecondCallSaw(threadId, first, [
    { callId: 'call_v_docs', name: 'browser', content: 'docs opened', isError: false },
  ]);
  await assertStoredAsShown(tab, threadId, probe);
});

test('J183 reject with a reason: the part ends output-denied, nothing runs, inference continues', async (t) => {
  const { threadId, tab } = await openTab(t, 'reject');
  await tab.send('Please open the admin page');

  await tab.waitForTool('call_v_admin', 'approval-requested');
  await tab.waitForIdle(1);
  await tab.reject('call_v_admin', 'Not now');
  await tab.waitForTool('call_v_admin', 'output-denied');
  await tab.waitForIdle(2);
  assert.equal(await tab.tool('call_v_admin').locator('.denied').textContent(), 'Denied: Not now');
  const answer = await tab.lastAnswer();
  assert.ok(answer.startsWith('May I open the admin page?Understood: '), answer);
  assert.ok(answer.includes('Not now'), `the model is told the reason: ${answer}`);

  const probe = await tab.probe();
  assert.deepEqual(probe.handlerRuns, {}, 'a rejected call never reaches its handler');
  assert.deepEqual(probe.requests.map((r) => r.status), [200, 200]);
  const decision = sentPart(probe.requests[1], 'call_v_admin');
  assert.equal(decision.state, 'approval-responded');
  assert.equal(decision.approval.id, 'call_v_admin');
  assert.equal(decision.approval.approved, false);
  assert.equal(decision.approval.reason, 'Not now');
  assert.deepEqual(autoSends(probe), [['call_v_admin:approval:false']]);

  const first = await tab.firstMessageId();
  const calls = await assertCompleted(threadId, first, 2);
  assert.equal(calls[1].toolResults.length, 1);
  assert.equal(calls[1].toolResults[0].callId, 'call_v_admin');
  assert.ok(calls[1].toolResults[0].content.includes('Not now'));
  await assertStoredAsShown(tab, threadId, probe);
});
