// Frontend tool round trips through the official client (reference catalogue J 161,
// 164-167, 169, 175). A frontend handoff is a RUN_FINISHED without an outcome: the
// client lists the unanswered calls in pendingToolCallIds, the page runs its handlers
// and sends role "tool" messages on the next runAgent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  answeredCalls,
  assertCleared,
  assertCompleted,
  assertFinished,
  assertSecondCallSaw,
  backendRuns,
  lastAssistantText,
  modelCalls,
  newThreadId,
  reload,
  threadRun,
} from './helpers.mjs';

const result = (callId, name, content, isError = false) => ({ callId, name, content, isError });

test('J161 one frontend round trip: the handler runs once, the model sees its result, the run is cleared', async () => {
  const threadId = newThreadId(161);
  const tab = new Tab({ threadId, handlers: { read_title: () => 'Contract Page' } });

  const first = await tab.turn('Do a round trip for the title');
  assert.deepEqual(first.startedCalls, ['call_rt_title']);
  assert.equal(first.of('RUN_FINISHED')[0].outcome, undefined, 'a handoff is not an interrupt');
  assert.deepEqual(first.pending, ['call_rt_title']);
  assert.deepEqual(tab.agent.pendingInterrupts, []);
  const waiting = await threadRun(threadId);
  assert.equal(waiting.status, 'suspended');
  assert.equal(waiting.interrupt.eventName, 'tool_results');
  assert.deepEqual(waiting.interrupt.toolCalls.map((call) => call.callId), ['call_rt_title']);

  const second = await tab.runAnswered(first.pending);
  assert.equal(tab.requests.at(-1).body.messages.at(-1).role, 'tool');
  assert.deepEqual(second.startedCalls, [], 'the answered call is not dispatched again');
  assert.equal(second.of('TOOL_CALL_RESULT').length, 0, "the page's own result is not echoed");
  assert.deepEqual(answeredCalls(tab.messages), ['call_rt_title']);
  assert.deepEqual(second.pending, []);
  assert.equal(lastAssistantText(tab.messages), 'The title is Contract Page.');
  assert.equal(tab.executions('read_title').length, 1);

  const calls = modelCalls(threadId);
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[1].toolResults, [result('call_rt_title', 'read_title', 'Contract Page')]);
  const page = await assertCleared(threadId);
  assert.deepEqual(
    page.messages.map((m) => [m.role, m.toolCallId ?? m.content]),
    [
      ['user', 'Do a round trip for the title'],
      ['assistant', ''],
      ['tool', 'call_rt_title'],
      ['assistant', 'The title is Contract Page.'],
    ],
  );
});

test('J164 mixed batch: the backend tool runs once, only the frontend call reaches the page', async () => {
  const threadId = newThreadId(164);
  const tab = new Tab({ threadId, handlers: { read_title: () => 'Mixed Page' } });
  // The log is shared by the whole suite: count this test's executions as a difference.
  const weatherRuns = () => backendRuns('weather', { city: 'Mixville' }).length;
  const before = weatherRuns();

  const first = await tab.turn('Run a mixed batch');
  // Both calls are on the wire; the backend one already carries its result.
  assert.deepEqual(first.startedCalls, ['call_mix_weather', 'call_mix_title']);
  assert.deepEqual(
    first.of('TOOL_CALL_RESULT').map((e) => [e.toolCallId, e.content]),
    [['call_mix_weather', 'sunny in Mixville']],
  );
  assert.deepEqual(first.pending, ['call_mix_title'], 'only the frontend call awaits the page');
  assert.equal(weatherRuns() - before, 1);

  const second = await tab.runAnswered(first.pending);
  assert.equal(second.of('TOOL_CALL_RESULT').length, 0, 'no result is echoed back');
  assert.equal(
    lastAssistantText(tab.messages),
    'Mixed: {"call_mix_weather":"sunny in Mixville","call_mix_title":"Mixed Page"}',
  );
  assert.deepEqual(tab.executions().map((c) => c.callId), ['call_mix_title']);
  assert.equal(weatherRuns() - before, 1, 'the backend tool ran once');
  await assertSecondCallSaw(threadId, [
    result('call_mix_weather', 'weather', 'sunny in Mixville'),
    result('call_mix_title', 'read_title', 'Mixed Page'),
  ]);
});

test('J165 two calls of the same tool stay distinct by call id', async () => {
  const threadId = newThreadId(165);
  const tab = new Tab({ threadId, handlers: { lookup: ({ query }) => `found ${query}` } });

  const first = await tab.turn('Two twin lookups please');
  assert.deepEqual(first.pending, ['call_twin_a', 'call_twin_b']);
  await tab.answer(first.pending);
  assert.deepEqual(
    tab.executions('lookup').map((c) => [c.callId, c.args]),
    [
      ['call_twin_a', { query: 'alpha' }],
      ['call_twin_b', { query: 'beta' }],
    ],
  );
  const second = await tab.run();
  assertFinished(second);
  assert.deepEqual(answeredCalls(tab.messages), ['call_twin_a', 'call_twin_b']);
  assert.equal(
    lastAssistantText(tab.messages),
    'Twins: {"call_twin_a":"found alpha","call_twin_b":"found beta"}',
  );
  await assertSecondCallSaw(threadId, [
    result('call_twin_a', 'lookup', 'found alpha'),
    result('call_twin_b', 'lookup', 'found beta'),
  ]);
});

test('J166 structured handler results reach the model as JSON text', async () => {
  const threadId = newThreadId(166);
  const values = { object: { a: 1 }, array: [1, 2], false: false, zero: 0, null: null };
  const tab = new Tab({ threadId, handlers: { lookup: ({ query }) => values[query] } });

  const first = await tab.turn('Return structured values');
  assert.equal(first.pending.length, 5);
  await tab.answer(first.pending);
  const sent = tab.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.deepEqual(sent, ['{"a":1}', '[1,2]', 'false', '0', 'null']);
  const second = await tab.run();
  assertFinished(second);

  const calls = await assertCompleted(threadId, 2);
  const seen = calls[1].toolResults.map((r) => r.content);
  assert.deepEqual(seen, ['{"a":1}', '[1,2]', 'false', '0', 'null'], 'text stays text');
  const page = await reload(threadId);
  const stored = page.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.deepEqual(stored, ['{"a":1}', '[1,2]', 'false', '0', 'null']);
});

test('J167 a throwing handler reaches the model as an error result', async () => {
  const threadId = newThreadId(167);
  const tab = new Tab({
    threadId,
    handlers: {
      lookup: () => {
        throw new Error('page not reachable');
      },
    },
  });

  const first = await tab.turn('Use the throwing handler');
  await tab.answer(first.pending);
  const sent = tab.messages.at(-1);
  assert.equal(sent.error, 'page not reachable');
  const second = await tab.run();
  assertFinished(second);
  assert.equal(tab.requests.at(-1).body.messages.at(-1).error, 'page not reachable');
  assert.equal(lastAssistantText(tab.messages), 'Handler said: page not reachable');
  assert.deepEqual(modelCalls(threadId)[1].toolResults, [
    result('call_throw', 'lookup', 'page not reachable', true),
  ]);
  const stored = (await reload(threadId)).messages.find((m) => m.role === 'tool');
  assert.equal(stored.error, 'page not reachable');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('J169 a second inference step dispatches only its new call', async () => {
  const threadId = newThreadId(169);
  const tab = new Tab({ threadId, handlers: { lookup: ({ query }) => `${query} done` } });

  const first = await tab.turn('Take two steps');
  assert.deepEqual(first.startedCalls, ['call_step_1']);

  const second = await tab.runAnswered(first.pending);
  assert.deepEqual(second.startedCalls, ['call_step_2'], 'the first call is not dispatched again');
  assert.deepEqual(second.pending, ['call_step_2']);

  const third = await tab.runAnswered(second.pending);
  assert.deepEqual(third.startedCalls, []);
  assert.deepEqual(answeredCalls(tab.messages), ['call_step_1', 'call_step_2']);
  assert.equal(lastAssistantText(tab.messages), 'Second: second done');
  assert.deepEqual(tab.executions().map((c) => c.callId), ['call_step_1', 'call_step_2']);
  const calls = await assertCompleted(threadId, 3);
  assert.deepEqual(calls[1].toolResults.map((r) => r.callId), ['call_step_1']);
  assert.deepEqual(calls[2].toolResults.map((r) => r.callId), ['call_step_1', 'call_step_2']);
});

test('J175 a long multibyte result survives the request, the SSE relay and storage', async () => {
  const threadId = newThreadId(175);
  // 2-, 3- and 4-byte UTF-8 sequences, long enough to span many network reads.
  const long = 'Grüße, 世界! 🌍🚀 ÅÄÖ ✓ '.repeat(1200);
  const tab = new Tab({ threadId, handlers: { lookup: () => long } });

  const first = await tab.turn('Echo a multibyte text');
  const second = await tab.runAnswered(first.pending);

  assert.ok(second.of('TEXT_MESSAGE_CONTENT').length > 100, 'the echo is streamed in many deltas');
  assert.equal(second.text, `Echo: ${long}`);
  assert.equal(lastAssistantText(tab.messages), `Echo: ${long}`);
  assert.equal(modelCalls(threadId)[1].toolResults[0].content, long);
  const page = await reload(threadId);
  assert.equal(page.messages.at(-1).content, `Echo: ${long}`);
  assert.equal((await threadRun(threadId)).status, 'completed');
});
