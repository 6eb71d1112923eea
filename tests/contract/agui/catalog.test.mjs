// Dynamic tool catalogs: the page declares its own frontend tools in
// RunAgentInput.tools, as the official client sends them on every run (reference
// catalogue J 178). relayline answers a catalog it cannot take with 400 before any
// header (DESIGN.md chose 400 where the reference fixture gave 500).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Tab,
  assertCompleted,
  assertFinished,
  assertRefused,
  lastAssistantText,
  modelCalls,
  newThreadId,
  threadRun,
  threadStatus,
} from './helpers.mjs';

/** A page tool with nested object, array and nullable parameters. */
const PICK_COLOR = {
  name: 'pick_color',
  description: 'Let the user pick a color from a palette',
  parameters: {
    type: 'object',
    properties: {
      palette: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          shades: { type: 'array', items: { type: 'string' }, minItems: 1 },
        },
        required: ['name'],
      },
      tags: {
        type: 'array',
        items: {
          type: 'object',
          properties: { label: { type: 'string' }, weight: { type: 'integer' } },
        },
      },
      note: { type: ['string', 'null'] },
    },
    required: ['palette'],
  },
};

test('J178 a catalog tool with nested, array and nullable parameters round-trips', async () => {
  const threadId = newThreadId(178);
  const tab = new Tab({ threadId, handlers: { pick_color: ({ palette }) => palette.shades[0] } });

  const first = await tab.turn('Use the catalog tool', { tools: [PICK_COLOR] });
  assert.deepEqual(tab.requests[0].body.tools, [PICK_COLOR], 'the client sent its catalog');
  assert.deepEqual(first.pending, ['call_pick']);
  await tab.answer(first.pending);
  assert.deepEqual(tab.executions('pick_color')[0].args, {
    palette: { name: 'sea', shades: ['teal', 'navy'] },
    tags: [{ label: 'calm', weight: 2 }],
    note: null,
  });

  const second = await tab.run({ tools: [PICK_COLOR] });
  assertFinished(second);
  assert.equal(lastAssistantText(tab.messages), 'Picked: teal');
  const calls = await assertCompleted(threadId, 2);
  for (const call of calls) {
    assert.ok(call.tools.includes('pick_color'), 'the model is offered the page tool');
    assert.ok(call.tools.includes('weather'), 'next to the backend tools');
  }
});

test('J178 a call to a tool nobody declared fails the run with RUN_ERROR', async () => {
  const threadId = newThreadId('178b');
  const tab = new Tab({ threadId, handlers: { pick_color: () => 'unused' } });

  const run = await tab.say('Call the ghost tool', { tools: [PICK_COLOR] });
  assert.equal(run.error, null, 'runAgent resolves on RUN_ERROR');
  assert.equal(run.types[0], 'RUN_STARTED');
  assert.equal(run.types.at(-1), 'RUN_ERROR');
  assert.equal(run.runError.message, "The model called the unknown tool 'ghost_tool'.");
  assert.equal(run.framesOf('RUN_ERROR')[0].code, 'provider_error');
  assert.deepEqual(run.startedCalls, [], 'the unknown call never reaches the page');
  assert.equal(tab.executions().length, 0);
  assert.equal((await threadRun(threadId)).status, 'failed');
  assert.equal(modelCalls(threadId).length, 1);
});

test('J178 a catalog the agent cannot take is refused before streaming', async () => {
  const threadId = newThreadId('178c');
  const tab = new Tab({ threadId });
  const shadow = {
    name: 'weather',
    description: 'The page would like to answer weather itself',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  };

  const collision = await tab.say('hello', { tools: [PICK_COLOR, shadow] });
  assertRefused(collision, 400, "Frontend tool 'weather' collides with a backend tool.");

  const union = {
    name: 'pick_union',
    description: 'A parameter schema outside the supported subset',
    parameters: { type: 'object', properties: { v: { anyOf: [{ type: 'string' }] } } },
  };
  const unsupported = await tab.run({ tools: [union] });
  assertRefused(unsupported, 400, "Frontend tool 'pick_union' declares unsupported parameters");

  assert.equal((await threadStatus(threadId)).status, 404, 'nothing was recorded');
  assert.equal(modelCalls(threadId).length, 0);
});
