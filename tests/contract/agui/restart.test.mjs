// A backend restart between two requests (reference catalogue J 174). The pytest
// driver replaces the Celery worker process on request; the fresh process must pick
// up the suspended run from the database and continue the wait, with the backend
// tool of the batch already settled, never executed again.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  Tab,
  backendRuns,
  lastAssistantText,
  modelCalls,
  newThreadId,
  restartWorker,
  threadRun,
} from './helpers.mjs';

test('J174 a fresh worker process continues the wait and does not rerun the backend tool', async () => {
  const threadId = newThreadId(174);
  const weatherRuns = () => backendRuns('weather', { city: 'Restartown' }).length;
  const before = weatherRuns();
  const tab = new Tab({ threadId, handlers: { read_title: () => 'Restart Page' } });

  const first = await tab.turn('Wait across a restart');
  assert.deepEqual(first.pending, ['call_rs_title']);
  assert.equal(weatherRuns() - before, 1);
  const suspended = await threadRun(threadId);
  assert.equal(suspended.status, 'suspended');

  const restarted = await restartWorker();
  assert.notEqual(restarted.after, restarted.before, 'a new worker process');

  const second = await tab.runAnswered(first.pending);
  assert.deepEqual(second.startedCalls, []);
  assert.equal(
    lastAssistantText(tab.messages),
    'After restart: {"call_rs_weather":"sunny in Restartown","call_rs_title":"Restart Page"}',
  );
  assert.match(
    readFileSync(restarted.log, 'utf8'),
    /relayline\.continue_run/,
    'the fresh process ran the continuation',
  );
  assert.equal(weatherRuns() - before, 1, 'the backend tool was not executed again');
  assert.equal(modelCalls(threadId).length, 2);
  const run = await threadRun(threadId);
  assert.equal(run.status, 'completed');
  assert.equal(run.attempt, suspended.attempt + 1);
});
