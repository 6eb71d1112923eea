// Reloading a CopilotKit page during an approval (reference catalogue J 187, after
// J 180). A reloaded page asks the runtime to connect to its thread; the v2 runtime's
// default InMemoryAgentRunner replays the thread's events from the bridge's memory,
// the open interrupt included. That memory lives only as long as the bridge process:
// after a bridge restart relayline's GET /agui/threads/<id> is what still knows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Page,
  assertCompleted,
  assertSettled,
  backendRuns,
  lastAssistantText,
  newThreadId,
  reload,
  startBridge,
  threadRun,
  transcript,
  useBridge,
} from './helpers.mjs';

const bridge = useBridge();

/** [id, role, content] of the messages a user reads, to compare ids across reloads. */
const identities = (messages) =>
  messages
    .filter((m) => m.role === 'user' || m.role === 'assistant' || m.role === 'tool')
    .map((m) => [m.id, m.role, m.content ?? '']);

/** What a `useInterrupt` render function shows, for comparing two sources. */
const shown = (interrupts) =>
  interrupts.map(({ id, reason, message, metadata }) => ({ id, reason, message, metadata }));

test('J187 reload while the bridge lives: the reopened page gets the open interrupt from the bridge memory and resolving it completes the run once', async () => {
  const threadId = newThreadId('reload');
  const args = { path: 'reports/ck-reload.log' };
  const first = new Page({ bridge, threadId });
  const asked = await first.say('Reload while approving, please');
  assertSettled(asked);
  assert.deepEqual(asked.interrupts.map((interrupt) => interrupt.id), ['ck_reload']);

  // The user reloads: a new page on the same thread connects to the runtime.
  const reloaded = new Page({ bridge, threadId });
  const opened = await reloaded.open();
  assert.deepEqual(opened.errors, []);
  assert.equal(
    bridge.forwarded(threadId).length,
    1,
    'the runtime replays the thread without asking relayline',
  );
  assert.deepEqual(transcript(reloaded.messages), transcript(first.messages));
  assert.deepEqual(identities(reloaded.messages), identities(first.messages));
  assert.deepEqual(shown(reloaded.interrupt.interrupts), shown(asked.interrupts));
  const pending = reloaded.agent.pendingInterrupts.map((interrupt) => interrupt.id);
  assert.deepEqual(pending, ['ck_reload']);

  // relayline's own reload endpoint agrees with what the bridge remembered.
  const stored = await reload(threadId);
  assert.equal(stored.status, 'suspended');
  assert.deepEqual(shown(stored.interrupts), shown(reloaded.interrupt.interrupts));
  assert.deepEqual(identities(stored.messages), identities(reloaded.messages));
  assert.equal((await threadRun(threadId)).status, 'suspended');
  assert.equal(backendRuns('delete_file', args).length, 0);

  const approved = await reloaded.approve();
  assertSettled(approved);
  assert.deepEqual(bridge.forwarded(threadId).at(-1).body.resume, [
    { interruptId: 'ck_reload', status: 'resolved', payload: { approved: true } },
  ]);
  assert.equal(
    lastAssistantText(reloaded.messages),
    'Deleted after reload: deleted reports/ck-reload.log',
  );
  assert.equal(backendRuns('delete_file', args).length, 1);
  await assertCompleted(threadId, 2);

  // A second reload shows the finished conversation and nothing left to approve.
  const later = new Page({ bridge, threadId });
  assert.deepEqual((await later.open()).errors, []);
  assert.deepEqual(later.interrupt.interrupts, []);
  assert.deepEqual(later.agent.pendingInterrupts, []);
  assert.deepEqual(transcript(later.messages), transcript(reloaded.messages));
  const settled = await reload(threadId);
  assert.deepEqual([settled.status, settled.interrupts], [null, []]);
  assert.deepEqual(identities(settled.messages).at(-1).slice(1), [
    'assistant',
    'Deleted after reload: deleted reports/ck-reload.log',
  ]);
  assert.equal(backendRuns('delete_file', args).length, 1);
});

test('J187 after a bridge restart the runtime replays nothing; GET /agui/threads restores the interrupt and resuming through the new bridge works', async () => {
  const threadId = newThreadId('restart');
  const args = { path: 'reports/ck-restart.tmp' };
  const oldBridge = await startBridge();
  let newBridge;
  try {
    const first = new Page({ bridge: oldBridge, threadId });
    const asked = await first.say('Approve after a bridge restart');
    assertSettled(asked);
    assert.deepEqual(asked.interrupts.map((interrupt) => interrupt.id), ['ck_restart']);
    await oldBridge.stop();

    newBridge = await startBridge();
    const reloaded = new Page({ bridge: newBridge, threadId });
    const opened = await reloaded.open();
    assert.deepEqual(opened.errors, []);
    assert.deepEqual(reloaded.messages, [], "the new runtime's memory holds nothing");
    assert.deepEqual(reloaded.interrupt.interrupts, []);

    // The application restores the page from relayline and answers from there.
    const stored = await reload(threadId);
    assert.deepEqual(shown(stored.interrupts), shown(asked.interrupts));
    assert.deepEqual(identities(stored.messages), identities(first.messages));
    reloaded.agent.setMessages(stored.messages);
    const resume = stored.interrupts.map(({ id }) => ({
      interruptId: id,
      status: 'resolved',
      payload: { approved: true },
    }));
    const approved = await reloaded.resume(resume);
    assertSettled(approved);
    assert.equal(
      lastAssistantText(reloaded.messages),
      'Deleted after restart: deleted reports/ck-restart.tmp',
    );
    assert.equal(backendRuns('delete_file', args).length, 1);
    await assertCompleted(threadId, 2);
  } finally {
    await oldBridge.stop();
    await newBridge?.stop();
  }
});
