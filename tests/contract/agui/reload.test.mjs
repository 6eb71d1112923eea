// Page reloads through GET /agui/threads/<id> (reference catalogue J 180-182): the
// reload seeds a fresh HttpAgent's initialMessages and pendingInterrupts, and the
// client resumes with `resume` entries built by its own buildResumeArray. A frontend
// wait reloads as a `tool_results` interrupt (live it was a plain
// handoff): the reload discarded whatever the old page was executing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildResumeArray } from '@ag-ui/client';
import {
  Tab,
  assertCompleted,
  assertFinished,
  lastAssistantText,
  modelCalls,
  newThreadId,
  reload,
  threadRun,
} from './helpers.mjs';

/** A new tab on the thread, built only from what the reload returned. */
function reloadedTab(threadId, page, handlers) {
  const tab = new Tab({
    threadId,
    handlers,
    initialMessages: page.messages,
    pendingInterrupts: page.interrupts,
  });
  tab.userMessages = page.messages.filter((m) => m.role === 'user').length;
  return tab;
}

test('J180 reload during an approval: hydrated messages and interrupts equal the live ones, resume works', async () => {
  const threadId = newThreadId(180);
  const live = new Tab({ threadId, handlers: { browser: () => 'never run in this tab' } });
  const first = await live.turn('Reload approval: open the settings');
  assert.equal(first.outcome, 'interrupt');

  const page = await reload(threadId);
  assert.equal(page.status, 'suspended');
  assert.deepEqual(page.messages, live.messages, 'the reload shows what the live page held');
  assert.deepEqual(page.interrupts, live.agent.pendingInterrupts);
  assert.deepEqual(page.interrupts.map((i) => [i.id, i.reason]), [['call_rl_approve', 'confirmation']]);

  const tab = reloadedTab(threadId, page, { browser: ({ page: name }) => `${name} opened` });
  const unanswered = await tab.run();
  assert.match(unanswered.error?.message ?? '', /pending interrupt/, 'the client keeps the interrupt');
  const resume = buildResumeArray(tab.agent.pendingInterrupts, {
    call_rl_approve: { status: 'resolved', payload: { approved: true } },
  });
  const approved = await tab.run({ resume });
  assertFinished(approved);
  assert.deepEqual(tab.requests.at(-1).body.resume, resume);
  assert.deepEqual(approved.startedCalls, ['call_rl_approve']);
  assert.deepEqual(approved.pending, ['call_rl_approve']);

  await tab.runAnswered(approved.pending);
  assert.equal(lastAssistantText(tab.messages), 'Opened after reload: settings opened');
  assert.equal(live.executions().length, 0);
  assert.equal(tab.executions('browser').length, 1);
  await assertCompleted(threadId, 2);
});

test('J181 reload while a frontend call awaits: stable ids, a generic wait interrupt, resolve completes', async () => {
  const threadId = newThreadId(181);
  const live = new Tab({ threadId, handlers: { read_title: () => 'never run in this tab' } });
  const first = await live.turn('Reload wait: read the title');
  assert.deepEqual(first.pending, ['call_rl_wait']);
  assert.deepEqual(live.agent.pendingInterrupts, [], 'live, a handoff has no interrupt');

  // The page reloads before its handler ran.
  const page = await reload(threadId);
  assert.equal(page.status, 'suspended');
  assert.deepEqual(page.messages, live.messages, 'same ids and shapes as the live stream');
  assert.equal(page.interrupts.length, 1);
  const [wait] = page.interrupts;
  assert.equal(wait.reason, 'tool_results');
  assert.equal(wait.id, String(wait.metadata.interruptId));
  assert.equal(wait.metadata.eventName, 'tool_results');
  assert.deepEqual(wait.metadata.toolCalls.map((c) => c.callId), ['call_rl_wait']);

  // The reloaded page runs the tool again and answers the interrupt with the results.
  const tab = reloadedTab(threadId, page, { read_title: () => 'Reloaded title' });
  const payload = {};
  for (const call of wait.metadata.toolCalls) {
    payload[call.callId] = { result: await tab.handlers[call.name](call.inputs) };
  }
  const resume = buildResumeArray(tab.agent.pendingInterrupts, {
    [wait.id]: { status: 'resolved', payload },
  });
  const resolved = await tab.run({ resume });
  assertFinished(resolved);
  assert.deepEqual(
    resolved.of('TOOL_CALL_RESULT').map((e) => [e.messageId, e.content]),
    [['result_call_rl_wait', 'Reloaded title']],
  );
  assert.deepEqual(tab.agent.pendingInterrupts, []);
  assert.equal(lastAssistantText(tab.messages), 'Title after reload: Reloaded title');
  assert.equal(modelCalls(threadId)[1].toolResults[0].content, 'Reloaded title');

  const again = await reload(threadId);
  assert.equal(again.status, null);
  assert.deepEqual(again.interrupts, []);
  assert.deepEqual(
    again.messages.map((m) => m.id),
    tab.messages.map((m) => m.id),
    'a second reload shows the ids the page holds',
  );
  assert.deepEqual(
    again.messages.slice(0, page.messages.length).map((m) => m.id),
    page.messages.map((m) => m.id),
  );
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('J182 reload then cancel settles the call as "Frontend tool execution cancelled."', async () => {
  const threadId = newThreadId(182);
  const live = new Tab({ threadId, handlers: { read_title: () => 'never run' } });
  const first = await live.turn('Reload cancel: read the title');

  const page = await reload(threadId);
  const [wait] = page.interrupts;
  assert.equal(wait.reason, 'tool_results');
  const tab = reloadedTab(threadId, page, { read_title: () => 'never run either' });
  const cancelled = await tab.run({
    resume: buildResumeArray(tab.agent.pendingInterrupts, { [wait.id]: { status: 'cancelled' } }),
  });
  assertFinished(cancelled);
  const text = 'Frontend tool execution cancelled.';
  const [raw] = cancelled.framesOf('TOOL_CALL_RESULT');
  assert.equal(raw.toolCallId, 'call_rl_cancel');
  assert.equal(raw.content, text);
  assert.equal(raw.error, text);
  assert.equal(lastAssistantText(tab.messages), `Cancelled: ${text}`);
  assert.equal(live.executions().length + tab.executions().length, 0);

  assert.deepEqual(modelCalls(threadId)[1].toolResults, [
    { callId: 'call_rl_cancel', name: 'read_title', content: text, isError: true },
  ]);
  const after = await reload(threadId);
  assert.equal(after.status, null);
  assert.deepEqual(after.interrupts, []);
  const stored = after.messages.find((m) => m.role === 'tool');
  assert.equal(stored.error, text);
});
