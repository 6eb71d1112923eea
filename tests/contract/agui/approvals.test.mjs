// Approval-gated frontend calls through the official client (reference catalogue J 162,
// 163). An approval is an interrupt outcome: the client keeps it in pendingInterrupts
// and refuses to run again until a resume entry answers it. A call awaiting approval
// must never be on the wire, or the page could execute it unapproved.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  answeredCalls,
  assertCompleted,
  assertFinished,
  lastAssistantText,
  modelCalls,
  newThreadId,
  reload,
  threadRun,
} from './helpers.mjs';

const decide = (interruptId, payload) => ({
  resume: [{ interruptId, status: 'resolved', payload }],
});

test('J162 approve then execute: dispatch only after approval, the handler runs once', async () => {
  const threadId = newThreadId(162);
  const tab = new Tab({ threadId, handlers: { browser: ({ page }) => `${page} opened` } });

  const first = await tab.turn('Please approve me to open the docs');
  assert.deepEqual(first.startedCalls, [], 'no executable call before approval');
  assert.equal(first.outcome, 'interrupt');
  const [interrupt] = first.interrupts;
  assert.equal(first.interrupts.length, 1);
  assert.equal(interrupt.id, 'call_approve');
  assert.equal(interrupt.reason, 'confirmation');
  assert.deepEqual(interrupt.metadata.inputs, { page: 'docs' });
  assert.deepEqual(interrupt.responseSchema.required, ['approved']);
  assert.deepEqual(tab.agent.pendingInterrupts.map((i) => i.id), ['call_approve']);
  assert.ok(!tab.messages.some((m) => m.toolCalls?.length), 'the page holds no call yet');
  assert.equal(lastAssistantText(tab.messages), 'I need your approval to open the docs.');
  let run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.equal(run.interrupt.eventName, 'approval');

  // The official client itself refuses a run that leaves the interrupt unanswered.
  const unanswered = await tab.run();
  assert.match(unanswered.error?.message ?? '', /pending interrupt/);
  assert.equal(unanswered.http, null, 'no request was sent');

  const approved = await tab.run(decide('call_approve', { approved: true }));
  assertFinished(approved);
  assert.deepEqual(approved.startedCalls, ['call_approve'], 'dispatched once approved');
  assert.equal(approved.outcome, 'success');
  assert.deepEqual(approved.pending, ['call_approve']);
  assert.deepEqual(tab.agent.pendingInterrupts, []);
  assert.equal(tab.executions().length, 0);
  run = await threadRun(threadId);
  assert.equal(run.status, 'suspended', 'the run waits for the page between the two steps');
  assert.equal(run.interrupt.eventName, 'tool_results');
  assert.equal(modelCalls(threadId).length, 1, 'an approval alone calls no model');

  const done = await tab.runAnswered(approved.pending);
  assert.deepEqual(done.startedCalls, []);
  assert.deepEqual(answeredCalls(tab.messages), ['call_approve']);
  assert.equal(lastAssistantText(tab.messages), 'Opened: docs opened');
  assert.equal(tab.executions('browser').length, 1);
  await assertCompleted(threadId, 2);
});

test('J163 reject: the call comes back with its rejection, nothing is pending, inference goes on', async () => {
  const threadId = newThreadId(163);
  const tab = new Tab({ threadId, handlers: { browser: () => 'must not run' } });

  const first = await tab.turn('Now reject me please');
  assert.deepEqual(first.interrupts.map((i) => i.id), ['call_reject']);

  const rejected = await tab.run(decide('call_reject', { approved: false, reason: 'Not now' }));
  assertFinished(rejected);
  assert.deepEqual(rejected.startedCalls, ['call_reject'], 'published with its result');
  const [shown] = rejected.of('TOOL_CALL_RESULT');
  assert.equal(shown.toolCallId, 'call_reject');
  assert.match(shown.content, /Not now/);
  assert.match(shown.content, /TOOL NOT EXECUTED/);
  const [raw] = rejected.framesOf('TOOL_CALL_RESULT');
  assert.equal('error' in raw, false, 'a rejection is an instruction, not an error');
  assert.deepEqual(rejected.pending, [], 'nothing is left for the page');
  assert.equal(tab.executions().length, 0);
  assert.equal(lastAssistantText(tab.messages), `Understood: ${shown.content}`);

  const calls = await assertCompleted(threadId, 2);
  assert.equal(calls[1].toolResults[0].isError, false);
  assert.match(calls[1].toolResults[0].content, /Not now/);
  const stored = (await reload(threadId)).messages.find((m) => m.role === 'tool');
  assert.equal(stored.content, shown.content);
  assert.equal('error' in stored, false);
});

test('J162 an approval later in a thread keeps one result per earlier call on the page', async () => {
  // The approval interrupt restates the conversation (MESSAGES_SNAPSHOT), which the
  // client adopts. The page answered the earlier call with a tool message of its own
  // id; the snapshot must not add the stored copy of that result a second time.
  const threadId = newThreadId('162b');
  const tab = new Tab({
    threadId,
    handlers: { read_title: () => 'Earlier Page', browser: ({ page }) => `${page} opened` },
  });
  const first = await tab.say('Do a round trip for the title');
  await tab.runAnswered(first.pending);

  const second = await tab.turn('Please approve me to open the docs');
  assert.equal(second.outcome, 'interrupt');
  // The backend's own history is right: one stored result, the run awaits approval.
  const run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.equal(run.interrupt.eventName, 'approval');
  const stored = (await reload(threadId)).messages.filter((m) => m.role === 'tool');
  assert.deepEqual(stored.map((m) => m.toolCallId), ['call_rt_title']);
  // The page must show the same: the snapshot it adopted lists each result once.
  const [snapshot] = second.framesOf('MESSAGES_SNAPSHOT');
  assert.deepEqual(answeredCalls(snapshot.messages), ['call_rt_title'], 'restated once');
  assert.deepEqual(answeredCalls(tab.messages), ['call_rt_title'], 'one tool message per call');
});
