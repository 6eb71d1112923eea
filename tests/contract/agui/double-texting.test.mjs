// Double texting (issue 11) with the official client: a second tab sends a message on a
// thread whose run still holds it. By default relayline refuses it (409);
// `forwardedProps.multitask: "interrupt"` stops the running answer (its stream ends
// as a user stop: TEXT_MESSAGE_END, RUN_FINISHED, no RUN_ERROR; it reloads as stopped)
// or settles a suspended run's open approval as stopped, then runs the new turn;
// `"enqueue"` answers at once with `X-Relayline-Queued` and streams the new turn once
// the running one has ended on its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  assertFinished,
  assertRefused,
  lastAssistantText,
  newThreadId,
  reload,
  threadRun,
  waitFor,
} from './helpers.mjs';

/** The whole answer of the slow scenario (tests/support/agents_contract.py, "slow answer"). */
const SLOW_TEXT = 'A slow answer. '.repeat(60);
/** relayline's text for a call the user's stop settled (shared/texts.py, CALL_STOPPED). */
const CALL_STOPPED = 'TOOL NOT COMPLETED: the user stopped the run before this call finished.';

/** Start a slow answer in `tab`; resolves once its text streams, with the run's promise and event times. */
async function slowAnswerStreaming(tab) {
  const times = new Map(); // event type -> Date.now() when the client applied it first
  let streaming = false;
  const run = tab.say('Give me a slow answer', {}, {
    onEvent: ({ event }) => {
      if (!times.has(event.type)) times.set(event.type, Date.now());
      if (event.type === 'TEXT_MESSAGE_CONTENT') streaming = true;
    },
  });
  await waitFor(() => streaming, { what: 'the slow answer to stream' });
  return { run, times };
}

/** A second tab on `threadId`, holding what the first one showed (as after opening the thread). */
function secondTab(threadId, first) {
  const tab = new Tab({ threadId, initialMessages: structuredClone(first.messages) });
  tab.userMessages = first.userMessages;
  return tab;
}

test('double texting: refused by default; "interrupt" stops the running answer and runs the new turn', async () => {
  const threadId = newThreadId('dt-interrupt');
  const first = new Tab({ threadId });
  const { run: firstRun } = await slowAnswerStreaming(first);

  const refused = await secondTab(threadId, first).say('hello too soon');
  assertRefused(refused, 409, threadId);

  const second = secondTab(threadId, first);
  const interrupting = await second.say('hello instead', { forwardedProps: { multitask: 'interrupt' } });
  assertFinished(interrupting);
  assert.equal(interrupting.text, 'Hello! hello instead');

  const stopped = await firstRun;
  assertFinished(stopped); // the stopped answer ends as a run, not as an error
  assert.ok(stopped.types.includes('TEXT_MESSAGE_END'), `events: ${stopped.types.join(', ')}`);
  assert.ok(stopped.text.length > 0 && stopped.text.length < SLOW_TEXT.length, `${stopped.text.length} chars streamed`);
  assert.ok(SLOW_TEXT.startsWith(stopped.text));

  const page = await reload(threadId);
  assert.equal(page.stopped.length, 1, 'the interrupted answer reloads as stopped');
  const answers = page.messages.filter((m) => m.role === 'assistant' && m.content);
  assert.deepEqual(
    answers.map((m) => m.content),
    [stopped.text, 'Hello! hello instead'],
    'history holds the stopped answer as streamed, then the new one',
  );
  assert.deepEqual(answers.map((m) => page.stopped.includes(m.id)), [true, false]);
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('double texting: "interrupt" on a run waiting for an approval settles the call as stopped', async () => {
  const threadId = newThreadId('dt-suspended');
  const first = new Tab({ threadId });
  const asked = await first.turn('Approve me: open the docs');
  assert.equal(asked.outcome, 'interrupt');
  assert.equal((await threadRun(threadId)).status, 'suspended');

  // The first tab's client refuses to send without resuming; another tab can.
  const second = secondTab(threadId, first);
  const run = await second.say('never mind, hello', { forwardedProps: { multitask: 'interrupt' } });
  assertFinished(run);
  assert.equal(run.text, 'Hello! never mind, hello');
  const page = await reload(threadId);
  assert.deepEqual(page.interrupts, [], 'nothing is left to approve');
  const settled = page.messages.filter((m) => m.role === 'tool' && m.toolCallId === 'call_approve');
  assert.deepEqual(settled.map((m) => m.content), [CALL_STOPPED], 'the approval was settled, not dropped');
  assert.equal((await threadRun(threadId)).status, 'completed');
});

test('double texting: "enqueue" answers queued at once and runs the new turn after the running one', async () => {
  const threadId = newThreadId('dt-enqueue');
  const first = new Tab({ threadId });
  const { run: firstRun, times: firstTimes } = await slowAnswerStreaming(first);

  const second = secondTab(threadId, first);
  const secondTimes = new Map();
  const queued = await second.say('hello after', { forwardedProps: { multitask: 'enqueue' } }, {
    onEvent: ({ event }) => void (secondTimes.has(event.type) || secondTimes.set(event.type, Date.now())),
  });
  assertFinished(queued);
  assert.equal(queued.http.queued, '1', 'X-Relayline-Queued: its place in the queue');
  assert.equal(queued.text, 'Hello! hello after');

  const whole = await firstRun;
  assertFinished(whole);
  assert.equal(whole.text, SLOW_TEXT, 'the running answer was not stopped');
  assert.ok(
    firstTimes.get('RUN_FINISHED') <= secondTimes.get('RUN_STARTED'),
    'the queued turn started after the running one finished',
  );
  const page = await reload(threadId);
  assert.deepEqual(page.stopped, []);
  assert.deepEqual(
    page.messages.filter((m) => m.role === 'assistant' && m.content).map((m) => m.content),
    [SLOW_TEXT, 'Hello! hello after'],
  );
  assert.equal((await threadRun(threadId)).status, 'completed');
});
