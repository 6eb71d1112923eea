// Configuration loading: the library's loadAgentConfig reads GET /agent/<agentId>
// (tools with isFrontend, suggestions, config), hydrateToolConfigs joins the page's
// handlers to the backend's declarations, and a chat built on them works end to end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  getBackendToolDefinitions,
  getFrontendToolDefinitions,
  groupSuggestionsByCategory,
  hydrateToolConfigs,
  loadAgentConfig,
} from '@cyronius/lm-ag-ui';
import {
  AGENT_ID,
  BASE_URL,
  Chat,
  assertBackendAgrees,
  assistantTexts,
  modelCalls,
  newThreadId,
} from './helpers.mjs';

const TOOL_CONFIGS = [
  {
    name: 'weather',
    description: 'Current weather.',
    isFrontend: false,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'City name.' } },
      required: ['city'],
    },
  },
  {
    name: 'read_title',
    description: 'Read the page title',
    isFrontend: true,
    parameters: { type: 'object', properties: {} },
  },
  {
    name: 'render_chart',
    description: 'Render a chart in the page',
    isFrontend: true,
    parameters: { type: 'object', properties: { kind: { type: 'string' } }, required: ['kind'] },
  },
];

test('loadAgentConfig reads the tools, suggestions and config of the named agent', async () => {
  const config = await loadAgentConfig(BASE_URL, AGENT_ID);

  assert.deepEqual(config.toolConfigs, TOOL_CONFIGS);
  assert.deepEqual(config.suggestions, [
    { suggestion: 'Read the page title', isPriority: true },
    { suggestion: 'Charts|Render a bar chart', isPriority: false },
    { suggestion: 'Weather|Weather in Oslo', isPriority: false },
  ]);
  assert.deepEqual(config.config, {});
  assert.deepEqual(groupSuggestionsByCategory(config.suggestions), [
    { category: 'Charts', suggestions: [{ text: 'Render a bar chart', isPriority: false }] },
    { category: 'Weather', suggestions: [{ text: 'Weather in Oslo', isPriority: false }] },
  ]);

  // The page supplies handlers; routing comes from the backend's isFrontend.
  const readTitle = () => 'Relayline Docs';
  const tools = hydrateToolConfigs(config.toolConfigs, { read_title: { handler: readTitle } });
  assert.deepEqual(
    Object.values(tools).map((tool) => [
      tool.definition.name,
      tool.isFrontend,
      tool.handler === readTitle,
    ]),
    [
      ['weather', false, false],
      ['read_title', true, true],
      ['render_chart', true, false],
    ],
  );
  assert.deepEqual(
    getBackendToolDefinitions(tools).map((d) => d.name),
    ['weather'],
  );
  assert.deepEqual(
    getFrontendToolDefinitions(tools).map((d) => d.name),
    ['read_title', 'render_chart'],
  );
});

test('a chat on the loaded configuration runs its priority suggestion end to end', async () => {
  const config = await loadAgentConfig(BASE_URL, AGENT_ID);
  const tools = hydrateToolConfigs(config.toolConfigs, {
    read_title: { handler: () => 'Relayline Docs' },
  });
  const threadId = newThreadId('config');
  const chat = new Chat({ threadId, tools });

  const priority = config.suggestions.find((s) => s.isPriority).suggestion;
  await chat.say(priority);

  chat.assertSettled();
  const [run, submission] = chat.exchanges;
  assert.deepEqual(
    run.request.body.tools,
    TOOL_CONFIGS.filter((t) => t.isFrontend).map(({ name, description, parameters }) => ({
      name,
      description,
      parameters,
    })),
    'the page declares the frontend tools it loaded, as loaded',
  );
  assert.deepEqual(
    chat.executions.map((e) => [e.name, e.afterRunFinished]),
    [['read_title', true]],
  );
  assert.equal(submission.kind, 'toolResults');
  assert.deepEqual(assistantTexts(chat.messages), [
    'Let me read the page title.',
    'The page title is Relayline Docs.',
  ]);

  await assertBackendAgrees(chat);
  const calls = modelCalls(threadId);
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[0].tools.sort(), ['read_title', 'render_chart', 'weather']);
});

test('an unknown agent fails configuration loading and runs with 404', async () => {
  await assert.rejects(loadAgentConfig(BASE_URL, 'no-such-agent'), {
    message: /^Failed to load configuration for agent 'no-such-agent' \(HTTP 404\)/,
  });

  const threadId = newThreadId('unknown');
  const chat = new Chat({ threadId, agentId: 'no-such-agent' });
  await chat.say('Hello?');
  const [exchange] = chat.exchanges;
  assert.equal(exchange.status, 404);
  assert.match(exchange.error?.message ?? '', /^HTTP 404: .*Agent 'no-such-agent' was not found/);
  assert.deepEqual(exchange.events, [], 'nothing was streamed');
  assert.equal(modelCalls(threadId).length, 0);
  const stored = await fetch(`${BASE_URL}/api/threads/${threadId}`);
  assert.equal(stored.status, 404, 'no thread was created');
});
