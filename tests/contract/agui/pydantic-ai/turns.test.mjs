// The official HttpAgent against a stack whose default agent (relayline.demo) runs a
// pydantic-ai model selected by RELAYLINE_MODEL: its OpenAI chat model or its Anthropic
// model (RELAYLINE_WIRE_KIND), talking to a local server that replays that provider's
// documented streaming wire format. Driven by tests/contract/test_agui_pydantic_ai.py,
// once per provider; it lives in a folder of its own so that test_agui_client.py (the
// scripted-agent suite, agui/*.test.mjs) does not run it against the wrong stack.
//
// Each test scripts what the model answers, in provider-neutral terms, through the
// driver's control endpoint (RELAYLINE_WIRE_CONTROL_URL), which renders it in the wire
// format and reports what the model was sent. The client validates every event it
// applies (its verifier makes runAgent reject on a protocol violation, which the Tab
// harness keeps in `run.error`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requireEnv, threadIds } from '../../shared/stack.mjs';
import { Tab, assertFinished, reload, threadRun } from '../helpers.mjs';

const DRIVER = 'test_agui_pydantic_ai.py';
const WIRE_URL = requireEnv('RELAYLINE_WIRE_CONTROL_URL', DRIVER);
const KIND = requireEnv('RELAYLINE_WIRE_KIND', DRIVER); // "openai" | "anthropic"
const KEY = requireEnv('RELAYLINE_WIRE_KEY', DRIVER); // the API key the worker was given
const MODEL_PATH = KIND === 'openai' ? '/v1/chat/completions' : '/v1/messages';
const newThreadId = threadIds(`pai-${KIND}-`);

/** `text` in pieces of `size` characters: a tool call's arguments over many deltas. */
const split = (text, size) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

/**
 * Queue the model's next answers (`{text, toolCalls: [{id, name, arguments}], usage,
 * cut}` each, in order). Returns a function giving the requests the model received
 * from then on (`{path, body, keyed, userAgent}` each).
 */
async function script(...replies) {
  const response = await fetch(`${WIRE_URL}/replies`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ replies }),
  });
  const answer = await response.json();
  assert.equal(response.status, 200, JSON.stringify(answer));
  return async () => {
    const all = await (await fetch(`${WIRE_URL}/received`)).json();
    return all.slice(answer.received);
  };
}

/** Event types with consecutive repeats folded: the shape of a run. */
const shape = (run) => run.types.filter((type, i, all) => type !== all[i - 1]);

/** Nothing a user can see (the raw frames, the thread's history and run) names the key. */
async function assertNoKey(run, threadId) {
  const seen = JSON.stringify([run.frames, await reload(threadId), await threadRun(threadId)]);
  assert.ok(!seen.includes(KEY), 'the API key is in what the page can read');
}

test(`${KIND}: a backend tool call split over many deltas, its result streamed, then the final text`, async () => {
  const threadId = newThreadId('tool');
  const args = '{"city": "Porto"}';
  const fragments = split(args, 2);
  const received = await script(
    {
      text: ['Let me ', 'look.'],
      toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: fragments }],
      usage: [30, 10],
    },
    { text: ['It is ', 'sunny ', 'in Porto.'], usage: [60, 5] },
  );
  const tab = new Tab({ threadId });

  const run = await tab.turn('What is the weather in Porto?');
  assert.deepEqual(run.warnings, [], 'the client stripped or questioned nothing');
  assert.deepEqual(run.failures, []);
  // Two model steps with the backend tool's execution between them.
  assert.deepEqual(shape(run), [
    'RUN_STARTED',
    'STEP_STARTED',
    'TEXT_MESSAGE_START',
    'TEXT_MESSAGE_CONTENT',
    'TEXT_MESSAGE_END',
    'STEP_FINISHED',
    'ACTIVITY_SNAPSHOT',
    'TOOL_CALL_START',
    'TOOL_CALL_ARGS',
    'TOOL_CALL_END',
    'TOOL_CALL_RESULT',
    'STEP_STARTED',
    'TEXT_MESSAGE_START',
    'TEXT_MESSAGE_CONTENT',
    'TEXT_MESSAGE_END',
    'STEP_FINISHED',
    'RUN_FINISHED',
  ]);
  // Every delta of the model reaches the page as its own event.
  assert.deepEqual(
    run.of('TEXT_MESSAGE_CONTENT').map((e) => e.delta),
    ['Let me ', 'look.', 'It is ', 'sunny ', 'in Porto.'],
  );
  const [start] = run.of('TOOL_CALL_START');
  assert.equal(start.toolCallId, 'call_w1');
  assert.equal(start.toolCallName, 'get_weather');
  const argDeltas = run.of('TOOL_CALL_ARGS');
  assert.ok(fragments.length > 4);
  assert.deepEqual(argDeltas.map((e) => e.delta), fragments, 'the arguments arrive as the model streamed them');
  assert.ok(argDeltas.every((e) => e.toolCallId === 'call_w1'));
  // The backend tool ran in the worker on the arguments assembled from those deltas.
  const [result] = run.of('TOOL_CALL_RESULT');
  assert.equal(result.toolCallId, 'call_w1');
  assert.equal(result.content, 'sunny and 21 °C in Porto');
  assert.deepEqual(run.pending, [], 'a backend call is not left to the page');

  // The page holds the conversation, plus the tool's activity (which is not stored).
  const activity = tab.messages.filter((m) => m.role === 'activity');
  assert.equal(activity.length, 1);
  const { callId, toolName, status } = activity[0].content;
  assert.deepEqual({ callId, toolName, status }, { callId: 'call_w1', toolName: 'get_weather', status: 'ok' });
  const conversation = tab.messages.filter((m) => m.role !== 'activity');
  assert.deepEqual(
    conversation.map((m) => [
      m.role,
      m.content ?? null,
      m.toolCalls?.map((c) => [c.id, c.function.name, c.function.arguments]) ?? null,
      m.toolCallId ?? null,
    ]),
    [
      ['user', 'What is the weather in Porto?', null, null],
      ['assistant', 'Let me look.', [['call_w1', 'get_weather', args]], null],
      ['tool', 'sunny and 21 °C in Porto', null, 'call_w1'],
      ['assistant', 'It is sunny in Porto.', null, null],
    ],
  );

  // What the backend stored: a reload shows the page exactly what it holds, and the run
  // completed with the tokens of both model calls.
  const page = await reload(threadId);
  // History keeps the parsed arguments and serialises them afresh (compact JSON), not
  // the model's own spelling of them: the same value, compared as such.
  const parsedCall = (c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } });
  const parsedArgs = (messages) =>
    messages.map((m) => (m.toolCalls ? { ...m, toolCalls: m.toolCalls.map(parsedCall) } : m));
  assert.deepEqual(parsedArgs(page.messages), parsedArgs(conversation));
  assert.equal(page.status, null);
  assert.deepEqual(page.interrupts, []);
  const stored = await threadRun(threadId);
  assert.equal(stored.status, 'completed');
  assert.deepEqual(stored.usage, { input: 90, output: 15 });

  // What the model was sent: two streamed calls with the key, the tools, then the result.
  const calls = await received();
  assert.equal(calls.length, 2);
  assert.ok(calls.every((c) => c.path === MODEL_PATH && c.keyed && c.body.stream === true));
  // pydantic-ai's HTTP client made them (not the dependency-free OpenAIProvider).
  for (const { userAgent } of calls) assert.match(userAgent, /^pydantic-ai\//);
  const toolNames = calls[0].body.tools.map((t) => t.name ?? t.function.name).sort();
  assert.deepEqual(toolNames, ['delete_file', 'get_weather', 'read_title']);
  assert.ok(JSON.stringify(calls[0].body.messages).includes('What is the weather in Porto?'));
  const second = JSON.stringify(calls[1].body.messages);
  assert.ok(second.includes('call_w1') && second.includes('sunny and 21 °C in Porto'), second);
  await assertNoKey(run, threadId);
});

test(`${KIND}: a stream cut short is RUN_ERROR saying so (provider_error), a failed run, no leak; the next turn runs`, async () => {
  const threadId = newThreadId('cut');
  const received = await script({ text: ['Half ', 'an ', 'answer'], cut: true });
  const tab = new Tab({ threadId });

  const run = await tab.say('Tell me something');
  assert.equal(run.error, null, 'runAgent resolves on RUN_ERROR: the events were valid');
  assert.deepEqual(run.failures, []);
  assert.equal(run.http.status, 200);
  assert.deepEqual(run.types.filter((t) => t.startsWith('RUN_')), ['RUN_STARTED', 'RUN_ERROR'], 'no RUN_FINISHED');
  assert.equal(run.types.at(-1), 'RUN_ERROR');
  assert.ok('Half an answer'.startsWith(run.text), `streamed before the cut: '${run.text}'`);
  assert.equal(run.runError.message, "The model provider's answer broke off before it was complete: try again.");
  const [raw] = run.framesOf('RUN_ERROR');
  assert.deepEqual(raw, { type: 'RUN_ERROR', message: run.runError.message, code: 'provider_error' }, 'the reason and its code');
  const frames = JSON.stringify(run.frames);
  for (const detail of ['127.0.0.1', 'chunked', 'ProviderError', 'Traceback']) {
    assert.ok(!frames.includes(detail), `'${detail}' reached the page`);
  }
  await assertNoKey(run, threadId);

  const failed = await threadRun(threadId);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.usage, null);
  const page = await reload(threadId);
  assert.equal(page.status, 'failed');
  assert.deepEqual(page.interrupts, []);
  assert.deepEqual(page.messages.map((m) => m.role), ['user'], 'the half-streamed answer is not in history');
  const cutCalls = await received();
  assert.equal(cutCalls.length, 1, 'one model call, not retried');
  assert.match(cutCalls[0].userAgent, /^pydantic-ai\//);

  // The thread stays usable, and the model is not shown the half answer.
  const again = await script({ text: ['Back ', 'again.'] });
  const next = await tab.turn('Are you there?');
  assert.equal(next.text, 'Back again.');
  assert.equal((await threadRun(threadId)).status, 'completed');
  const [call] = await again();
  const sent = JSON.stringify(call.body.messages);
  assert.ok(sent.includes('Tell me something') && sent.includes('Are you there?'), sent);
  assert.ok(!sent.includes('Half'), sent);
  assert.deepEqual((await reload(threadId)).messages.map((m) => m.role), ['user', 'user', 'assistant']);
});
