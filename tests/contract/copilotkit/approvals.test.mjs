// Approvals through the runtime bridge (reference catalogue J 187, after J 162-163). A
// call that needs approval ends the run with an AG-UI interrupt outcome (one
// "confirmation" interrupt per call); the page handles it as `useInterrupt` does and
// resolves it, which sends a `resume` array through the runtime to POST /agui.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import {
  Page,
  assertCompleted,
  assertSecondCallSaw,
  assertSettled,
  backendRuns,
  lastAssistantText,
  modelCalls,
  newThreadId,
  threadRun,
  toolResults,
  transcript,
  useBridge,
} from './helpers.mjs';

const bridge = useBridge();

/** The page's handler for the backend's approval-gated frontend tool `open_page`. */
const openPage = {
  name: 'open_page',
  description: 'Open a page of the application',
  parameters: z.object({ page: z.string() }),
  handler: async ({ page }) => `${page} opened`,
};

/** The one interrupt a turn left open, checked to be a confirmation for `name`. */
function confirmation(turn, id, name, inputs) {
  assert.deepEqual(
    turn.interrupts.map((interrupt) => interrupt.id),
    [id],
    'one confirmation interrupt per gated call',
  );
  const [interrupt] = turn.interrupts;
  assert.equal(interrupt.reason, 'confirmation');
  assert.equal(typeof interrupt.message, 'string');
  assert.ok(interrupt.message.length > 0, 'the user is told what to approve');
  assert.equal(interrupt.metadata.name, name);
  assert.deepEqual(interrupt.metadata.inputs, inputs);
  assert.deepEqual(interrupt.responseSchema.required, ['approved']);
  return interrupt;
}

test('J187 approval through a confirmation interrupt: nothing runs before it, the backend tool runs once after', async () => {
  const threadId = newThreadId('approve');
  const page = new Page({ bridge, threadId });
  const args = { path: 'reports/ck-draft.pdf' };

  const asked = await page.say('Please delete the draft');
  assertSettled(asked);
  assert.equal(asked.runs, 1);
  assert.deepEqual(asked.startedCalls, [], 'no call is on the wire before approval');
  assert.equal(asked.of('RUN_FINISHED')[0].outcome.type, 'interrupt');
  confirmation(asked, 'ck_delete', 'delete_file', args);
  assert.deepEqual(page.agent.pendingInterrupts.map((interrupt) => interrupt.id), ['ck_delete']);
  assert.equal(lastAssistantText(page.messages), 'I need your approval to delete the draft.');
  let run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.equal(run.interrupt.eventName, 'approval');
  assert.equal(backendRuns('delete_file', args).length, 0);

  const approved = await page.approve();
  assertSettled(approved);
  assert.equal(approved.runs, 1);
  assert.deepEqual(approved.interrupts, [], 'nothing is left to approve');
  assert.deepEqual(page.agent.pendingInterrupts, []);
  const [first, resumed, ...rest] = bridge.forwarded(threadId);
  assert.deepEqual(rest, []);
  assert.deepEqual(resumed.body.resume, [
    { interruptId: 'ck_delete', status: 'resolved', payload: { approved: true } },
  ]);
  assert.equal(resumed.body.runId, first.body.runId, 'useInterrupt resumes the interrupted run id');
  assert.equal(resumed.status, 200);
  assert.deepEqual(toolResults(page.messages), [['ck_delete', 'deleted reports/ck-draft.pdf']]);
  assert.equal(lastAssistantText(page.messages), 'Done: deleted reports/ck-draft.pdf');

  assert.equal(backendRuns('delete_file', args).length, 1);
  assert.equal(modelCalls(threadId).length, 2);
  run = await threadRun(threadId);
  assert.equal(run.status, 'completed');
});

test('J187 rejection through the interrupt: the tool never runs and the model reads the reason', async () => {
  const threadId = newThreadId('reject');
  const page = new Page({ bridge, threadId });
  const args = { path: 'reports/ck-archive.zip' };

  const asked = await page.say('Please delete the archive');
  assertSettled(asked);
  confirmation(asked, 'ck_keep', 'delete_file', args);

  const rejected = await page.reject('Not now');
  assertSettled(rejected);
  assert.deepEqual(bridge.forwarded(threadId).at(-1).body.resume, [
    { interruptId: 'ck_keep', status: 'resolved', payload: { approved: false, reason: 'Not now' } },
  ]);
  const [result] = rejected.of('TOOL_CALL_RESULT');
  assert.equal(result.toolCallId, 'ck_keep');
  assert.match(result.content, /Not now/);
  assert.equal(result.error, undefined, 'a rejection is an instruction, not an error');
  assert.match(lastAssistantText(page.messages), /^Understood: .*Not now/s);

  assert.equal(backendRuns('delete_file', args).length, 0);
  const calls = await assertCompleted(threadId, 2);
  assert.equal(calls[1].toolResults.length, 1);
  assert.equal(calls[1].toolResults[0].isError, false);
  assert.match(calls[1].toolResults[0].content, /Not now/);
});

test('J187 an approval-gated frontend tool: the gate holds although the page declares the tool, then the handler runs once', async () => {
  const threadId = newThreadId('gated');
  const page = new Page({ bridge, threadId, tools: [openPage] });

  const asked = await page.say('Please open the docs');
  assertSettled(asked);
  assert.deepEqual(
    bridge.forwarded(threadId)[0].body.tools.map((tool) => tool.name),
    ['open_page'],
    'registering a handler declares the tool in the page catalog',
  );
  assert.deepEqual(asked.startedCalls, [], 'no executable call before approval');
  assert.deepEqual(page.executions(), [], 'the handler must not run before approval');
  confirmation(asked, 'ck_open', 'open_page', { page: 'docs' });
  const run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.equal(run.interrupt.eventName, 'approval');
  assert.equal(modelCalls(threadId).length, 1);

  const heldBefore = new Set(page.messages.map((message) => message.id));
  const approved = await page.approve();
  assertSettled(approved);
  assert.deepEqual(approved.startedCalls, ['ck_open'], 'dispatched once approved');
  const [start] = approved.of('TOOL_CALL_START');
  assert.ok(
    !heldBefore.has(start.parentMessageId),
    `the call is filed under '${start.parentMessageId}', a message the page held before this ` +
      'run: CopilotKit executes only the calls of messages new to a run ' +
      '(RunHandler.processAgentResult scans the run result newMessages), so the handler never runs',
  );
  assert.equal(approved.runs, 2, 'the handoff, then CopilotKit follow-up run with the result');
  assert.deepEqual(page.executions(), [
    { name: 'open_page', args: { page: 'docs' }, callId: 'ck_open' },
  ]);
  assert.deepEqual(toolResults(page.messages), [['ck_open', 'docs opened']]);
  assert.equal(lastAssistantText(page.messages), 'Opened: docs opened');
  await assertSecondCallSaw(threadId, [
    { callId: 'ck_open', name: 'open_page', content: 'docs opened', isError: false },
  ]);

  // Opening the thread again replays it from the bridge: the handler does not run again.
  const again = new Page({ bridge, threadId, tools: [openPage] });
  const opened = await again.open();
  assert.deepEqual(opened.errors, []);
  assert.deepEqual(transcript(again.messages), transcript(page.messages));
  assert.deepEqual(again.executions(), []);
  assert.equal(page.executions().length, 1);
  assert.equal(modelCalls(threadId).length, 2);
});
