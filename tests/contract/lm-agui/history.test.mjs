// Both sendFullHistory modes over several turns (a plain answer, a frontend tool with
// text, a backend tool, a frontend tool alone, a plain answer). The library ships the
// newest turn only (false, the default: relayline keeps the history) or the page's whole
// transcript (true); either way the page, the stored history and what the model was
// given hold every message once, in the same order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Chat,
  assertBackendAgrees,
  assistantTexts,
  frontendTool,
  modelCalls,
  newThreadId,
  storedRun,
  weatherRuns,
} from './helpers.mjs';

const TITLES = { page: 'Relayline Docs', window: 'Dashboard' };

/** Five turns on one thread; `check` runs after each settled turn. */
async function converse(chat, city, check) {
  const turns = [
    ['Hi, I am testing', ['Hello! You said: Hi, I am testing']],
    [
      'What is the page title?',
      ['Let me read the page title.', `The page title is ${TITLES.page}.`],
    ],
    [
      `And the weather in ${city}?`,
      [`Checking the weather in ${city}.`, `Weather: sunny in ${city}.`],
    ],
    ['Now the window title', [`The window title is ${TITLES.window}.`]],
    // A new turn after a call the library filed under its own `msg_<time>` id.
    ['Thanks, bye', ['Hello! You said: Thanks, bye']],
  ];
  const expected = [];
  for (const [content, answers] of turns) {
    const before = chat.exchanges.length;
    await chat.say(content);
    chat.assertSettled();
    expected.push(...answers);
    assert.deepEqual(assistantTexts(chat.messages), expected, `after "${content}"`);
    assert.equal((await storedRun(chat.threadId)).status, 'completed', `after "${content}"`);
    await assertBackendAgrees(chat);
    check(chat.exchanges.slice(before));
  }
}

function titleTools() {
  let title = 'page';
  return {
    read_title: frontendTool('read_title', 'Read the page title', () => {
      const shown = TITLES[title];
      title = 'window'; // the page navigates after its title was read
      return shown;
    }),
  };
}

/** A page on a new thread with the title tool, in one `sendFullHistory` mode. */
function titleChat(scenario, sendFullHistory) {
  return new Chat({ threadId: newThreadId(scenario), sendFullHistory, tools: titleTools() });
}

/** What the backend must have done for the five turns, whatever the mode. */
function assertBackendWork(chat, city, weatherBefore) {
  assert.deepEqual(
    chat.executions.map((e) => e.toolCallId),
    ['call_lm_page', 'call_lm_window'],
    'each frontend call ran once in the page',
  );
  assert.equal(weatherRuns(city).length - weatherBefore, 1, 'the backend tool ran once');
  const calls = modelCalls(chat.threadId);
  assert.equal(calls.length, 8, 'one model call per answer and per tool result');
  const users = calls.map((call) => call.lastUser);
  assert.deepEqual(users, [
    'Hi, I am testing',
    'What is the page title?',
    'What is the page title?',
    `And the weather in ${city}?`,
    `And the weather in ${city}?`,
    'Now the window title',
    'Now the window title',
    'Thanks, bye',
  ]);
}

test('sendFullHistory false sends only the newest turn and nothing is duplicated', async () => {
  const chat = titleChat('stateful', false);

  const weatherBefore = weatherRuns('Bergen').length;

  await converse(chat, 'Bergen', (exchanges) => {
    for (const { kind, request, page } of exchanges) {
      const expected =
        kind === 'run'
          ? [page.at(-1)] // the new user message
          : page.filter((m) => m.role === 'tool'); // every result, earlier cycles included
      assert.deepEqual(request.body.messages, expected, `${kind} request`);
    }
  });

  const lastResults = chat.exchanges.at(-2).request.body.messages.map((m) => m.toolCallId);
  assert.deepEqual(lastResults, ['call_lm_page', 'call_lm_weather_bergen', 'call_lm_window']);
  assertBackendWork(chat, 'Bergen', weatherBefore);
});

test('sendFullHistory true sends the whole transcript and nothing is duplicated', async () => {
  const chat = titleChat('stateless', true);

  const weatherBefore = weatherRuns('Tromso').length;

  await converse(chat, 'Tromso', (exchanges) => {
    for (const { kind, request, page } of exchanges) {
      assert.deepEqual(request.body.messages, page, `${kind} request`);
    }
  });

  assert.equal(chat.exchanges.length, 7, 'five turns and two tool result submissions');
  const finalSent = chat.exchanges.at(-1).request.body.messages;
  assert.equal(finalSent.length, chat.messages.length - 1, 'all but the answer it brought');
  assert.ok(
    finalSent.some((m) => m.id.startsWith('msg_')),
    'including the id only the page knows',
  );
  assertBackendWork(chat, 'Tromso', weatherBefore);
});
