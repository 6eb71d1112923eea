// Frontend tools of a CopilotKit page through the runtime bridge (reference catalogue
// J 187, with the CopilotKit facts of section 6.8). The page declares its tools with
// `addTool` (what `useFrontendTool` does); the runtime forwards them as
// RunAgentInput.tools; relayline hands the model's call back as a plain AG-UI handoff
// (RUN_FINISHED without an outcome); CopilotKit runs the handler and starts a
// follow-up run carrying the role "tool" message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import {
  Page,
  assertCleared,
  assertSettled,
  heldCalls,
  lastAssistantText,
  modelCalls,
  newThreadId,
  threadRun,
  toolResults,
  transcript,
  useBridge,
} from './helpers.mjs';

const bridge = useBridge();

const pickColor = (handler) => ({
  name: 'pick_color',
  description: 'Pick a color from a palette',
  parameters: z.object({
    palette: z.string().describe('The palette to pick from'),
    count: z.number().int(),
  }),
  handler,
});

test('J187 a tool of the page catalog reaches POST /agui, comes back to the page once, and its result reaches the model', async () => {
  const threadId = newThreadId('catalog');
  const page = new Page({
    bridge,
    threadId,
    tools: [pickColor(async ({ palette, count }) => ({ color: 'teal', palette, count }))],
  });

  const turn = await page.say('Please pick a color');
  assertSettled(turn);
  assert.equal(turn.runs, 2, 'the answer and CopilotKit follow-up run');
  assert.equal(turn.of('RUN_FINISHED')[0].outcome, undefined, 'a handoff is not an interrupt');
  assert.deepEqual(turn.startedCalls, ['ck_pick']);

  // What the user sees: the call, the page's answer, then the model's reply.
  const answer = '{"color":"teal","palette":"sea","count":2}';
  assert.deepEqual(page.executions(), [
    { name: 'pick_color', args: { palette: 'sea', count: 2 }, callId: 'ck_pick' },
  ]);
  assert.deepEqual(heldCalls(page.messages), [
    ['ck_pick', 'pick_color', { palette: 'sea', count: 2 }],
  ]);
  assert.deepEqual(toolResults(page.messages), [['ck_pick', answer]]);
  assert.equal(lastAssistantText(page.messages), `Picked: ${answer}`);

  // What reached POST /agui: the catalog as JSON Schema, then the result as a tool message.
  const [first, followUp, ...rest] = bridge.forwarded(threadId);
  assert.deepEqual(rest, []);
  assert.deepEqual([first.status, followUp.status], [200, 200]);
  const declared = {
    name: 'pick_color',
    description: 'Pick a color from a palette',
    parameters: {
      type: 'object',
      properties: {
        palette: { type: 'string', description: 'The palette to pick from' },
        count: { type: 'integer' },
      },
      required: ['palette', 'count'],
    },
  };
  assert.deepEqual(first.body.tools, [declared]);
  assert.deepEqual(followUp.body.tools, [declared]);
  const sent = followUp.body.messages.at(-1);
  assert.deepEqual([sent.role, sent.toolCallId, sent.content], ['tool', 'ck_pick', answer]);

  // What the backend recorded: two model calls, the second one seeing the page's result.
  const calls = modelCalls(threadId);
  assert.equal(calls.length, 2);
  assert.ok(calls[0].tools.includes('pick_color'), `offered: ${calls[0].tools}`);
  assert.deepEqual(calls[1].toolResults, [
    { callId: 'ck_pick', name: 'pick_color', content: answer, isError: false },
  ]);
  const stored = await assertCleared(threadId);
  assert.deepEqual(transcript(stored.messages), [
    ['user', 'Please pick a color'],
    ['assistant', 'Let me ask the page.'],
    ['tool', 'ck_pick'],
    ['assistant', `Picked: ${answer}`],
  ]);
});

test('J187 a handler that returns nothing answers "" and the run completes', async () => {
  const threadId = newThreadId('empty');
  const page = new Page({ bridge, threadId, tools: [pickColor(async () => undefined)] });

  const turn = await page.say('Pick a colour, quietly');
  assertSettled(turn);
  assert.equal(turn.runs, 2);
  assert.equal(page.executions().length, 1);
  assert.deepEqual(toolResults(page.messages), [['ck_pick', '']]);
  assert.equal(lastAssistantText(page.messages), 'Picked: ');
  assert.equal(bridge.forwarded(threadId).at(-1).body.messages.at(-1).content, '');
  assert.deepEqual(modelCalls(threadId)[1].toolResults, [
    { callId: 'ck_pick', name: 'pick_color', content: '', isError: false },
  ]);
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('J187 an unmounted tool is absent from the next request, and a model call to it fails the run', async () => {
  const threadId = newThreadId('unmounted');
  const page = new Page({ bridge, threadId, tools: [pickColor(async () => 'must not run')] });
  page.unmount('pick_color'); // its component went away before the user asked

  const turn = await page.say('Call the unmounted tool');
  assert.equal(turn.runs, 1);
  assert.deepEqual(
    turn.of('RUN_ERROR').map((event) => event.message),
    ["The model called the unknown tool 'pick_color'."],
    'the user sees the run fail, and why',
  );
  assert.deepEqual(
    turn.errors.map((error) => error.code),
    ['agent_run_error_event'],
    'CopilotKit reports the failed run',
  );
  assert.deepEqual(page.executions(), []);
  assert.deepEqual(toolResults(page.messages), []);

  const [request, ...rest] = bridge.forwarded(threadId);
  assert.deepEqual(rest, []);
  assert.deepEqual(request.body.tools, [], 'an unmounted tool is not declared');
  const calls = modelCalls(threadId);
  assert.equal(calls.length, 1);
  assert.ok(!calls[0].tools.includes('pick_color'), `offered: ${calls[0].tools}`);
  assert.equal((await threadRun(threadId)).status, 'failed');

  // A failed run does not hold the thread: the next message runs at once.
  const next = await page.say('Hello again');
  assertSettled(next);
  assert.equal(lastAssistantText(page.messages), 'Hello! Hello again');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('J187 a throwing handler: CopilotKit sends "Error: …" with no follow-up run, so the backend run stays suspended', async () => {
  const threadId = newThreadId('throwing');
  const page = new Page({
    bridge,
    threadId,
    tools: [
      {
        name: 'read_clock',
        description: 'Read the clock of a time zone',
        parameters: z.object({ zone: z.string() }),
        handler: async () => {
          throw new Error('clock unavailable');
        },
      },
    ],
  });

  const turn = await page.say('Read the broken clock');
  assert.equal(turn.runs, 1, 'no follow-up run after a failed handler');
  assert.equal(turn.of('RUN_ERROR').length, 0);
  assert.deepEqual(
    turn.errors.map((error) => [error.code, error.message]),
    [['tool_handler_failed', 'clock unavailable']],
  );
  assert.deepEqual(page.executions(), [
    { name: 'read_clock', args: { zone: 'UTC' }, callId: 'ck_clock' },
  ]);
  assert.deepEqual(toolResults(page.messages), [['ck_clock', 'Error: clock unavailable']]);

  // Nothing went back to relayline, which still waits for the page's result.
  assert.equal(bridge.forwarded(threadId).length, 1);
  assert.equal(modelCalls(threadId).length, 1);
  const run = await threadRun(threadId);
  assert.equal(run.status, 'suspended');
  assert.equal(run.interrupt.eventName, 'tool_results');
  assert.deepEqual(
    run.interrupt.toolCalls.map((call) => call.callId),
    ['ck_clock'],
  );
});
