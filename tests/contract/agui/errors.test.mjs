// Failures as the official client sees them (reference catalogue J 168, 176, 177, 179).
// Before any SSE header a failure is an HTTP error and runAgent rejects; after the
// headers it is a RUN_ERROR event and runAgent *resolves*, so these tests assert on
// the events and on the backend, never on resolution alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  assertRefused,
  assertSecondCallSaw,
  backendRuns,
  lastAssistantText,
  modelCalls,
  newThreadId,
  reload,
  threadRun,
  threadStatus,
  waitFor,
} from './helpers.mjs';

test('J168 a backend tool error: the frame has content and error, the page keeps only content', async () => {
  const threadId = newThreadId(168);
  const explosions = () => backendRuns('explode', { reason: 'disk on fire' }).length;
  const before = explosions();
  const tab = new Tab({ threadId });

  const run = await tab.turn('Trigger a backend failure');
  const text = 'RuntimeError: disk on fire';
  const [raw] = run.framesOf('TOOL_CALL_RESULT');
  assert.equal(raw.toolCallId, 'call_boom');
  assert.equal(raw.content, text);
  assert.equal(raw.error, text, 'the wire marks the result as an error');
  // AG-UI 1.0 has no error field on TOOL_CALL_RESULT: the client strips it, and says so.
  const [applied] = run.of('TOOL_CALL_RESULT');
  assert.equal('error' in applied, false);
  assert.ok(
    run.warnings.some((w) => w.includes('error') && w.includes('TOOL_CALL_RESULT')),
    `the client reports the stripped field: ${run.warnings.join(' | ')}`,
  );
  assert.deepEqual(
    tab.messages.find((m) => m.role === 'tool'),
    { id: 'result_call_boom', role: 'tool', toolCallId: 'call_boom', content: text },
  );
  assert.deepEqual(run.pending, [], 'a settled backend call is not left to the page');
  assert.equal(lastAssistantText(tab.messages), `Backend said: ${text}`);

  assert.equal(explosions() - before, 1);
  await assertSecondCallSaw(threadId, [
    { callId: 'call_boom', name: 'explode', content: text, isError: true },
  ]);
  const stored = (await reload(threadId)).messages.find((m) => m.role === 'tool');
  assert.equal(stored.error, text, 'a reload keeps the error marker');
});

test('J176 an error before streaming rejects the run with the HTTP error and records nothing', async () => {
  const threadId = newThreadId(176);

  // A named agent whose factory fails: 503 before any header, saying which setting.
  const broken = new Tab({ threadId, path: '/agent/broken' });
  const failed = await broken.say('Hello broken agent');
  assertRefused(
    failed,
    503,
    "The agent 'broken' cannot be loaded from RELAYLINE_AGENTS " +
      '(tests.support.agents_contract:broken_spec): RuntimeError: ' +
      "The 'broken' agent is not registered with any provider. " +
      "Fix RELAYLINE_AGENTS or the agent's module.",
  );
  assert.equal(failed.error.payload.type, 'AgentUnavailableError');
  assert.equal(failed.runError, null, 'no RUN_ERROR: the run never started');
  assert.equal(failed.failures.length, 1, 'the client reports the failed run');

  const unknown = new Tab({ threadId, path: '/agent/nobody' });
  assertRefused(await unknown.say('Hello?'), 404, "Agent 'nobody' was not found.");

  assert.equal((await threadStatus(threadId)).status, 404, 'no thread was created');
  assert.equal(modelCalls(threadId).length, 0);
  // The same thread id still works with a real agent.
  const tab = new Tab({ threadId });
  const run = await tab.turn('hello there');
  assert.equal(run.text, 'Hello! hello there');
  assert.deepEqual((await reload(threadId)).messages, tab.messages, 'reasoning ids included');
});

test('J177 an error after streaming: RUN_ERROR says the provider failed (code provider_error), the run failed, the next message runs', async () => {
  const threadId = newThreadId(177);
  const tab = new Tab({ threadId });

  const run = await tab.say('Please fail after text');
  assert.equal(run.error, null, 'runAgent resolves on RUN_ERROR');
  assert.equal(run.http.status, 200);
  assert.deepEqual(
    run.types.filter((t) => t.startsWith('RUN_')),
    ['RUN_STARTED', 'RUN_ERROR'],
    'no RUN_FINISHED',
  );
  assert.equal(run.types.at(-1), 'RUN_ERROR');
  assert.ok(run.types.indexOf('TEXT_MESSAGE_END') < run.types.indexOf('RUN_ERROR'));
  assert.equal(run.text, 'Partial answer that never completes.');
  const failed = 'The model provider failed to answer: try again in a moment.';
  assert.equal(run.runError.message, failed);
  const [raw] = run.framesOf('RUN_ERROR');
  assert.deepEqual(raw, { type: 'RUN_ERROR', message: failed, code: 'provider_error' }, 'the reason and its code');
  assert.ok(!JSON.stringify(run.frames).includes('upstream exploded'), 'no internal detail leaks');

  assert.equal((await threadRun(threadId)).status, 'failed');
  const page = await reload(threadId);
  assert.equal(page.status, 'failed');
  assert.deepEqual(page.interrupts, []);
  assert.deepEqual(
    page.messages.map((m) => m.role),
    ['user'],
    'the half-streamed answer is not in history',
  );
  assert.equal(modelCalls(threadId).length, 1);

  const next = await tab.turn('hello again');
  assert.equal(next.text, 'Hello! hello again');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('J179 a client that aborts mid-stream stops only its relay: the run completes, the thread stays usable', async () => {
  // relayline's design (DESIGN.md, flows): the worker owns the run, so a tab that goes
  // away loses only its subscription; the reference failed the run instead.
  const threadId = newThreadId(179);
  const tab = new Tab({ threadId });
  const full = 'A slow answer. '.repeat(60); // streamed over about 1.4 s

  const run = await tab.say(
    'Give me a slow answer',
    {},
    {
      onTextMessageContentEvent: () => {
        tab.agent.abortRun(); // the user closes the tab after the first words
      },
    },
  );
  assert.equal(run.error, null, 'an aborted run resolves');
  assert.ok(!run.types.includes('RUN_FINISHED'), `events: ${run.types.join(', ')}`);
  assert.ok(run.text.length > 0 && run.text.length < full.length, 'aborted mid-answer');
  assert.ok(full.startsWith(run.text));

  const done = await waitFor(async () => {
    const current = await threadRun(threadId);
    return current.status === 'completed' && current;
  }, { what: 'the run to complete in the worker' });
  assert.equal(done.status, 'completed');
  const page = await reload(threadId);
  assert.equal(page.messages.at(-1).content, full, 'the whole answer reached history');
  assert.equal(modelCalls(threadId).length, 1);

  const next = await tab.turn('hello after the abort');
  assert.equal(next.text, 'Hello! hello after the abort');
});
