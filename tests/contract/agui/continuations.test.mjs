// Continuation rules seen through the official client (reference catalogue J 170-173):
// partial and out-of-order results, identical resubmission, conflicting results and
// stale requests. Refusals come before any SSE header, so runAgent rejects with the
// HTTP error (status and JSON payload) and no event reaches the client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  answeredCalls,
  assertCompleted,
  assertFinished,
  assertRefused,
  lastAssistantText,
  modelCalls,
  newThreadId,
  threadRun,
} from './helpers.mjs';

test('J170-172 partial, out-of-order, repeated and conflicting results on one batch', async () => {
  const threadId = newThreadId(170);
  const tab = new Tab({ threadId, handlers: { lookup: ({ query }) => `${query} found` } });

  const first = await tab.turn('Start a partial batch');
  assert.deepEqual(first.pending, ['call_part_1', 'call_part_2', 'call_part_3']);
  const suspended = await threadRun(threadId);

  // J170: the page answers the last call first, and only that one.
  const partial = await tab.runAnswered(['call_part_3']);
  assert.deepEqual(partial.startedCalls, [], 'held calls are not dispatched again');
  assert.equal(partial.of('TOOL_CALL_RESULT').length, 0, 'the accepted result is not echoed');
  assert.equal(modelCalls(threadId).length, 1, 'no inference before the batch is settled');
  const waiting = await threadRun(threadId);
  assert.equal(waiting.status, 'suspended');
  assert.equal(waiting.attempt, suspended.attempt + 1);
  assert.deepEqual(
    waiting.interrupt.toolCalls.map((call) => call.callId),
    ['call_part_1', 'call_part_2'],
    'the accepted result is kept, the others stay pending',
  );

  // J171: the very same request again is accepted without any work.
  const repeated = await tab.run();
  assertFinished(repeated);
  assert.deepEqual(repeated.types, ['RUN_STARTED', 'RUN_FINISHED']);
  assert.equal(modelCalls(threadId).length, 1);
  const unchanged = await threadRun(threadId);
  assert.equal(unchanged.status, 'suspended');
  assert.equal(unchanged.attempt, waiting.attempt, 'nothing was written');

  // J172: a different outcome for the settled call is a conflict (409)...
  const answered = tab.messages.at(-1);
  tab.agent.setMessages([...tab.messages.slice(0, -1), { ...answered, content: 'other' }]);
  const conflicting = await tab.run();
  assertRefused(conflicting, 409, 'already been settled with a different outcome');
  // ...and two different answers for one call in one request are a 400.
  tab.agent.setMessages([
    ...tab.messages.slice(0, -1),
    answered,
    { ...answered, id: `${answered.id}-2`, content: 'other' },
  ]);
  const ambiguous = await tab.run();
  assertRefused(ambiguous, 400, "Conflicting responses for tool call 'call_part_3'");
  tab.agent.setMessages([...tab.messages.slice(0, -2), answered]);
  assert.equal((await threadRun(threadId)).attempt, waiting.attempt, 'refusals wrote nothing');

  const done = await tab.runAnswered(['call_part_1', 'call_part_2']);
  assert.equal(done.of('TOOL_CALL_RESULT').length, 0, 'no result the page sent is echoed');
  assert.deepEqual(answeredCalls(tab.messages), ['call_part_3', 'call_part_1', 'call_part_2']);
  assert.equal(
    lastAssistantText(tab.messages),
    'Partial: {"call_part_1":"one found","call_part_2":"two found","call_part_3":"three found"}',
  );
  assert.deepEqual(
    tab.executions().map((call) => call.callId),
    ['call_part_3', 'call_part_1', 'call_part_2'],
    'each handler ran once',
  );
  const calls = await assertCompleted(threadId, 2);
  assert.deepEqual(
    calls[1].toolResults.map((r) => [r.callId, r.content]),
    [
      ['call_part_1', 'one found'],
      ['call_part_2', 'two found'],
      ['call_part_3', 'three found'],
    ],
  );
});

test('J173 stale requests: a run that no longer waits after completion, no matching input from an earlier turn', async () => {
  const threadId = newThreadId(173);
  const tab = new Tab({ threadId, handlers: { lookup: ({ query }) => `${query} result` } });

  const first = await tab.say('The stale one');
  await tab.answer(first.pending);
  const earlier = structuredClone(tab.messages); // the continuation of the first turn
  assertFinished(await tab.run());
  const completed = structuredClone(tab.messages);
  assert.equal(lastAssistantText(completed), 'Old: old result');

  // The same continuation again, once the run completed (a retried request, an old tab).
  tab.agent.setMessages(earlier);
  const late = await tab.run();
  // The run exists and ended: a conflict that carries the state it ended in.
  assertRefused(late, 409, 'there is no current interruption to answer.');
  assert.equal(late.error.payload.code, 'RUN_NOT_WAITING');
  assert.equal(late.error.payload.status, 'completed');
  assert.equal(modelCalls(threadId).length, 2);

  tab.agent.setMessages(completed);
  const second = await tab.turn('And the stale two');
  assert.deepEqual(second.pending, ['call_stale_2']);
  const current = structuredClone(tab.messages);

  // The first turn's answer while the second turn waits: it matches nothing pending.
  tab.agent.setMessages(earlier);
  const foreign = await tab.run();
  assertRefused(foreign, 400, 'The payload contains no matching continuation input.');
  const run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.deepEqual(run.interrupt.toolCalls.map((c) => c.callId), ['call_stale_2']);

  tab.agent.setMessages(current);
  await tab.runAnswered(['call_stale_2']);
  assert.equal(lastAssistantText(tab.messages), 'New: new result');
  assert.equal(modelCalls(threadId).length, 4, 'the stale requests ran nothing');
  assert.equal(tab.executions().length, 2);
});
