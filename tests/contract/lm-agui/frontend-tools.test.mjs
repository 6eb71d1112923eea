// Frontend tools: the page executes a pending call when RUN_FINISHED arrives and sends
// the result with AgentClient.submitToolResults; a handler that calls
// ctx.stopAfterToolCall() ends the turn without another model call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Chat,
  assertBackendAgrees,
  assistantTexts,
  conversation,
  frontendTool,
  modelCalls,
  newThreadId,
} from './helpers.mjs';

const CHART_PARAMETERS = { properties: { kind: { type: 'string' } }, required: ['kind'] };

test('a frontend tool runs at RUN_FINISHED and submitToolResults sends its result', async () => {
  const threadId = newThreadId('frontend');
  const readTitle = frontendTool('read_title', 'Read the page title', () => 'Relayline Docs');
  const chat = new Chat({ threadId, tools: { read_title: readTitle } });

  await chat.say('What is the page title?');

  chat.assertSettled();
  const [run, submission] = chat.exchanges;
  assert.deepEqual(
    chat.exchanges.map((e) => e.kind),
    ['run', 'toolResults'],
  );
  assert.deepEqual(run.request.body.tools, [readTitle.definition], 'the page declared its tool');
  const started = run.events.filter((event) => event.type === 'TOOL_CALL_START');
  assert.deepEqual(
    started.map((event) => [event.toolCallId, event.toolCallName]),
    [['call_lm_page', 'read_title']],
  );
  assert.equal(
    run.types.includes('TOOL_CALL_RESULT'),
    false,
    'relayline leaves the call to the page',
  );

  // The handler ran once, after the first run finished and before the submission.
  assert.deepEqual(chat.executions, [
    {
      toolCallId: 'call_lm_page',
      name: 'read_title',
      args: {},
      afterRunFinished: true,
      exchangesBefore: 1,
    },
  ]);

  // Stateful mode: the submission carries the tool result only, and no stop flag.
  const sent = submission.request.body;
  assert.equal(sent.threadId, threadId);
  assert.deepEqual(sent.forwardedProps, {});
  assert.equal(sent.messages.length, 1);
  assert.deepEqual(
    {
      role: sent.messages[0].role,
      toolCallId: sent.messages[0].toolCallId,
      content: sent.messages[0].content,
    },
    { role: 'tool', toolCallId: 'call_lm_page', content: 'Relayline Docs' },
  );
  assert.equal(submission.text, 'The page title is Relayline Docs.');

  // What the user sees.
  const announced = run.events.find((event) => event.type === 'TEXT_MESSAGE_START').messageId;
  const answered = submission.events.find((event) => event.type === 'TEXT_MESSAGE_START').messageId;
  assert.deepEqual(conversation(chat.messages), [
    `user ${threadId}-u1: What is the page title?`,
    `assistant ${announced}: Let me read the page title. read_title#call_lm_page({})`,
    'tool call_lm_page: Relayline Docs',
    `assistant ${answered}: The page title is Relayline Docs.`,
  ]);

  // What the backend recorded: two model calls, the second one given the result.
  await assertBackendAgrees(chat);
  const calls = modelCalls(threadId);
  assert.equal(calls.length, 2);
  assert.equal(calls[1].seen.at(-1), 'tool call_lm_page');
});

for (const sendFullHistory of [false, true]) {
  const mode = `sendFullHistory ${sendFullHistory}`;
  test(`stopAfterToolCall ends the turn without another model call (${mode})`, async () => {
    const threadId = newThreadId(`stop-${sendFullHistory}`);
    const renderChart = frontendTool(
      'render_chart',
      'Render a chart in the page',
      (args, updateState, getState, configJson, ctx) => {
        ctx.stopAfterToolCall(); // the chart is the answer: nothing left to narrate
        return JSON.stringify({ rendered: args.kind });
      },
      CHART_PARAMETERS,
    );
    const chat = new Chat({ threadId, sendFullHistory, tools: { render_chart: renderChart } });

    await chat.say('Render a bar chart please');

    chat.assertSettled();
    const [run, submission] = chat.exchanges;
    assert.equal(chat.exchanges.length, 2);
    assert.deepEqual(
      chat.executions.map((e) => [e.toolCallId, e.args, e.afterRunFinished]),
      [['call_lm_chart', { kind: 'bar' }, true]],
    );
    assert.deepEqual(submission.request.body.forwardedProps, { stopAfterToolCall: true });
    const result = submission.page.at(-1);
    assert.deepEqual(
      [result.role, result.toolCallId, result.content],
      ['tool', 'call_lm_chart', '{"rendered":"bar"}'],
    );
    const expected = sendFullHistory ? submission.page : [result];
    assert.deepEqual(submission.request.body.messages, expected, 'as the mode says');
    const shown = submission.types.filter((type) => /^(TEXT_MESSAGE|TOOL_CALL)_/.test(type));
    assert.deepEqual(shown, [], 'the run completes with nothing more to show');

    // What the user sees: the call and its result, no narration after it.
    assert.equal(run.text, '', 'the call came without text');
    assert.deepEqual(conversation(chat.messages), [
      `user ${threadId}-u1: Render a bar chart please`,
      'assistant -:  render_chart#call_lm_chart({"kind":"bar"})',
      'tool call_lm_chart: {"rendered":"bar"}',
    ]);

    // What the backend recorded: one model call, the result stored, the run completed.
    await assertBackendAgrees(chat);
    assert.equal(modelCalls(threadId).length, 1, 'the model was not called after the tool');

    // The thread is free: the next turn runs, and the model sees the stored result.
    await chat.say('Thanks');
    chat.assertSettled();
    assert.equal(chat.messages.at(-1).content, 'Hello! You said: Thanks');
    await assertBackendAgrees(chat);
    const calls = modelCalls(threadId);
    assert.equal(calls.length, 2);
    assert.ok(calls[1].seen.includes('tool call_lm_chart'));
  });
}

test('without stopAfterToolCall the same tool is followed by another model call', async () => {
  const threadId = newThreadId('nostop');
  const renderChart = frontendTool(
    'render_chart',
    'Render a chart in the page',
    (args) => JSON.stringify({ rendered: args.kind }),
    CHART_PARAMETERS,
  );
  const chat = new Chat({ threadId, tools: { render_chart: renderChart } });

  await chat.say('Render a bar chart please');

  chat.assertSettled();
  assert.deepEqual(chat.exchanges[1].request.body.forwardedProps, {});
  assert.deepEqual(assistantTexts(chat.messages), ['Here is your chart: {"rendered":"bar"}.']);
  await assertBackendAgrees(chat);
  assert.equal(modelCalls(threadId).length, 2);
});
