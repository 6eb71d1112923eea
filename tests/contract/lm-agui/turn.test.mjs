// A turn through AgentClient.runAgent against POST /agent/<agentId>: the page shows the
// streamed answer under the id relayline stored, and a backend tool's result arrives as
// TOOL_CALL_RESULT without any frontend round trip.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AGENT_ID,
  BASE_URL,
  Chat,
  assertBackendAgrees,
  assistantTexts,
  conversation,
  modelCalls,
  newThreadId,
  weatherRuns,
} from './helpers.mjs';

test('a turn streams the answer and the backend records it once', async () => {
  const threadId = newThreadId('turn');
  const chat = new Chat({ threadId });

  await chat.say('Hello relayline');

  chat.assertSettled();
  assert.equal(chat.exchanges.length, 1, 'one request, no tool round trip');
  const [exchange] = chat.exchanges;
  assert.equal(exchange.request.url, `${BASE_URL}/agent/${AGENT_ID}`);
  assert.equal(exchange.request.body.threadId, threadId);
  assert.deepEqual(exchange.request.body.messages, [
    { id: `${threadId}-u1`, role: 'user', content: 'Hello relayline' },
  ]);
  const deltas = exchange.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT');
  assert.ok(deltas.length > 1, 'the answer arrives as it is produced');

  // What the user sees: their message and the answer, under the id relayline streamed.
  const answerId = deltas[0].messageId;
  assert.deepEqual(conversation(chat.messages), [
    `user ${threadId}-u1: Hello relayline`,
    `assistant ${answerId}: Hello! You said: Hello relayline`,
  ]);

  // What the backend recorded: the same two messages, one model call by the named agent.
  await assertBackendAgrees(chat);
  const calls = modelCalls(threadId);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].lastUser, 'Hello relayline');
  assert.deepEqual(calls[0].tools.sort(), ['read_title', 'render_chart', 'weather']);
});

test('a backend tool result reaches the page without a frontend round trip', async () => {
  const threadId = newThreadId('backend');
  const chat = new Chat({ threadId });
  const weatherBefore = weatherRuns('Oslo').length;

  await chat.say("What's the weather in Oslo?");

  chat.assertSettled();
  assert.equal(chat.exchanges.length, 1, 'nothing is submitted back');
  assert.deepEqual(chat.executions, [], 'no frontend handler runs for a backend tool');
  const result = chat.exchanges[0].events.find((event) => event.type === 'TOOL_CALL_RESULT');
  assert.equal(result.toolCallId, 'call_lm_weather_oslo');
  assert.equal(result.content, 'sunny in Oslo');
  assert.deepEqual(assistantTexts(chat.messages), [
    'Checking the weather in Oslo.',
    'Weather: sunny in Oslo.',
  ]);

  const history = await assertBackendAgrees(chat);
  const announced = chat.messages[1].id;
  const call = 'weather#call_lm_weather_oslo({"city":"Oslo"})';
  assert.deepEqual(conversation(history.messages).slice(1, 3), [
    `assistant ${announced}: Checking the weather in Oslo. ${call}`,
    'tool call_lm_weather_oslo: sunny in Oslo',
  ]);
  assert.equal(modelCalls(threadId).length, 2);
  assert.equal(weatherRuns('Oslo').length - weatherBefore, 1, 'the backend tool ran once');
});
