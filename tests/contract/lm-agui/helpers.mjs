// Shared plumbing for the @cyronius/lm-ag-ui contract suite: a chat page built on the
// library's framework-free AgentClient, and probes of what the backend recorded.
//
// The driver (tests/contract/test_lm_agui_client.py) sets:
//   RELAYLINE_BASE_URL     the web app of the running stack
//   RELAYLINE_AGENT_ID     the named agent behind POST/GET /agent/<agentId>
//   RELAYLINE_TEST_COUNTS  where that agent (tests/contract/lm_agui_agent.py) logs model
//                          calls and backend tool executions, as JSON lines
import assert from 'node:assert/strict';
import { format } from 'node:util';
import { AgentClient, getAllToolDefinitions, getFrontendToolDefinitions } from '@cyronius/lm-ag-ui';
import { Backend, firstMessageId, lastAssistantText, requireEnv, threadIds } from '../shared/stack.mjs';

export { lastAssistantText };

const DRIVER = 'test_lm_agui_client.py';
export const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
export const AGENT_ID = requireEnv('RELAYLINE_AGENT_ID', DRIVER);
export const COUNTS_DIR = requireEnv('RELAYLINE_TEST_COUNTS', DRIVER);
const backend = new Backend({
  baseUrl: BASE_URL,
  countsDir: COUNTS_DIR,
  modelLog: 'lm-model.jsonl',
  toolPrefix: 'lm-tool',
});

/**
 * The library narrates every request and event on the console. Keep that narration
 * here instead of in the test report; assertion messages quote its tail when useful.
 */
export const clientLog = [];
for (const level of ['debug', 'info', 'warn', 'error']) {
  console[level] = (...args) => clientLog.push(`${level}: ${format(...args)}`);
}

/** A thread id unique to this run of the suite (the database outlives a single test). */
export const newThreadId = threadIds('lm-');

/** A frontend ToolDefinition as an lm-ag-ui page declares it. */
export function frontendTool(name, description, handler, parameters = {}) {
  return {
    definition: {
      name,
      description,
      parameters: { type: 'object', properties: {}, required: [], ...parameters },
    },
    isFrontend: true,
    handler,
  };
}

// ---------------------------------------------------------------------------------
// The chat page

/** One AgentClient call (runAgent or submitToolResults): what was sent and received. */
class Exchange {
  constructor(kind) {
    this.kind = kind; // "run" | "toolResults"
    this.request = null; // {url, body} as the client sent it
    this.page = null; // the page's messages when the request left
    this.status = null; // HTTP status of the response
    this.events = []; // AG-UI events as the client applied them
    this.finished = false; // RUN_FINISHED arrived
    this.error = null; // what the client call rejected with
  }

  get types() {
    return this.events.map((event) => event.type);
  }

  /** The text streamed in this exchange, all messages concatenated. */
  get text() {
    return this.events
      .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
      .map((event) => event.delta)
      .join('');
  }
}

/**
 * A chat page on one thread, wired as the library's own `useAgent` wires AgentClient
 * (docs/guide.md, "What happens to a turn"; its React hooks cannot run without a renderer): text deltas
 * accumulate into the assistant message, tool calls are buffered, a backend result
 * (TOOL_CALL_RESULT) becomes a tool message, and at RUN_FINISHED the buffered calls are
 * committed with the text and every pending frontend call is executed by its handler,
 * whose results go back through `submitToolResults` (with `forwardedProps.stopAfterToolCall`
 * when a handler called `ctx.stopAfterToolCall()`). Message ids and shapes are the
 * library's: the assistant message takes the streamed text message id (or `msg_<time>`
 * without text), results are `tool_<callId>_<time>` and `tool_result_<callId>_<time>`.
 */
export class Chat {
  #current = null; // the Exchange in progress
  #chain = null; // the frontend-tool round trip started by the last RUN_FINISHED
  #text = ''; // streaming text of the open assistant message
  #textId = null; // its message id
  #buffers = new Map(); // toolCallId -> {name, args, resultReceived}
  #committed = new Set(); // call ids already committed to an assistant message this run
  #state = {}; // the tools' shared state (updateState/getState)

  constructor({ threadId, sendFullHistory = false, tools = {}, agentId = AGENT_ID } = {}) {
    this.threadId = threadId;
    this.tools = tools;
    this.messages = []; // what the page shows, in order
    this.exchanges = [];
    this.executions = []; // one per frontend handler run
    this.droppedResults = []; // call ids of TOOL_CALL_RESULTs for calls never started
    this.turns = 0;
    this.client = new AgentClient(BASE_URL, agentId, {
      sendFullHistory,
      initialThreadId: threadId,
      requestHandler: (url, init) => this.#fetch(url, init),
    });
    this.subscriber = {
      onRunStartedEvent: () => this.#runStarted(),
      onTextMessageStartEvent: () => this.#commit(),
      onTextMessageContentEvent: ({ event }) => {
        this.#text += event.delta;
        this.#textId = event.messageId;
      },
      onToolCallStartEvent: ({ event }) => {
        this.#buffers.set(event.toolCallId, {
          name: event.toolCallName,
          args: '',
          resultReceived: false,
        });
      },
      onToolCallArgsEvent: ({ event }) => {
        const buffer = this.#buffers.get(event.toolCallId);
        if (buffer) buffer.args += event.delta;
      },
      onToolCallResultEvent: ({ event }) => this.#backendResult(event),
      onRunFinishedEvent: () => this.#runFinished(),
      onRunErrorEvent: ({ event }) => this.#runError(event),
      onEvent: ({ event }) => {
        this.#current?.events.push(event);
      },
    };
  }

  async #fetch(url, init) {
    const exchange = this.#current;
    exchange.request = { url, body: JSON.parse(init.body) };
    exchange.page = structuredClone(this.messages);
    const response = await fetch(url, init);
    exchange.status = response.status;
    return response;
  }

  /** Send a user message (ids `<threadId>-u<n>`) and wait until the turn settles,
   * frontend tool round trips included. */
  async say(content) {
    this.turns += 1;
    this.messages.push({ id: `${this.threadId}-u${this.turns}`, role: 'user', content });
    this.client.startNewRun();
    await this.#exchange('run', () =>
      this.client.runAgent(
        [...this.messages],
        getFrontendToolDefinitions(this.tools),
        this.subscriber,
        {},
      ),
    );
    while (this.#chain) {
      const chain = this.#chain;
      this.#chain = null;
      await chain;
    }
  }

  async #exchange(kind, send) {
    const exchange = new Exchange(kind);
    this.exchanges.push(exchange);
    this.#current = exchange;
    try {
      await send();
    } catch (error) {
      exchange.error = error;
    }
  }

  #runStarted() {
    this.#text = '';
    this.#textId = null;
    this.#committed.clear();
  }

  /** Commit the streamed text and the uncommitted calls as one assistant message,
   * ahead of the results already received for those calls. */
  #commit() {
    const text = this.#text.trim();
    const calls = [...this.#buffers]
      .filter(([id]) => !this.#committed.has(id))
      .map(([id, buffer]) => ({
        id,
        type: 'function',
        function: { name: buffer.name, arguments: buffer.args || '{}' },
      }));
    const textId = this.#textId;
    this.#text = '';
    this.#textId = null;
    if (!text && calls.length === 0) return;
    const repeated = text && text === lastAssistantText(this.messages, { sinceUser: true });
    if (repeated && calls.length === 0) return; // the library drops an identical repeat
    const message = { id: textId || `msg_${Date.now()}`, role: 'assistant' };
    if (text && !repeated) message.content = text;
    if (calls.length > 0) message.toolCalls = calls;
    const ids = new Set(calls.map((call) => call.id));
    let at = this.messages.length;
    while (
      at > 0 &&
      this.messages[at - 1].role === 'tool' &&
      ids.has(this.messages[at - 1].toolCallId)
    ) {
      at -= 1;
    }
    this.messages.splice(at, 0, message);
    for (const call of calls) this.#committed.add(call.id);
  }

  #backendResult(event) {
    const buffer = this.#buffers.get(event.toolCallId);
    if (!buffer) {
      this.droppedResults.push(event.toolCallId); // the library drops it with a warning
      return;
    }
    buffer.resultReceived = true;
    this.messages.push({
      id: `tool_result_${event.toolCallId}_${Date.now()}`,
      role: 'tool',
      content: event.content || '',
      toolCallId: event.toolCallId,
    });
  }

  #runFinished() {
    this.#current.finished = true;
    this.#commit();
    this.client.endRun();
    const pending = [...this.#buffers].filter(([, buffer]) => !buffer.resultReceived);
    this.#buffers.clear();
    if (pending.length > 0) this.#chain = this.#runFrontendTools(pending);
  }

  #runError(event) {
    this.#commit();
    this.messages.push({
      id: `error_${Date.now()}`,
      role: 'assistant',
      content: `Error: ${event.message}`,
    });
    this.client.endRun();
  }

  /** Execute the pending frontend calls (handlers start inside the RUN_FINISHED
   * callback, as the library's runner does) and submit their results. */
  async #runFrontendTools(pending) {
    const finishedExchange = this.#current;
    let stop = false;
    const results = [];
    for (const [toolCallId, { name, args }] of pending) {
      const tool = this.tools[name];
      if (!tool?.isFrontend) continue; // the library skips calls it cannot run
      const parsed = args ? JSON.parse(args) : null;
      const execution = {
        toolCallId,
        name,
        args: parsed,
        afterRunFinished: finishedExchange.finished,
        exchangesBefore: this.exchanges.length,
      };
      this.executions.push(execution);
      const context = {
        toolCallId,
        toolName: name,
        stopAfterToolCall: () => {
          stop = true;
        },
      };
      const value = await tool.handler?.(
        parsed,
        (key, data) => {
          this.#state[key] = data;
        },
        (key) => (key ? this.#state[key] : this.#state),
        tool.configJson,
        context,
      );
      const message = {
        id: `tool_${toolCallId}_${Date.now()}`,
        role: 'tool',
        content: value || '{}',
        toolCallId,
      };
      this.messages.push(message);
      results.push(message);
    }
    if (results.length === 0) return;
    this.client.startNewRun();
    await this.#exchange('toolResults', () =>
      this.client.submitToolResults(
        this.messages,
        this.subscriber,
        getAllToolDefinitions(this.tools),
        stop ? { stopAfterToolCall: true } : {},
      ),
    );
  }

  /** Assert that every exchange so far was a complete, successful AG-UI run. */
  assertSettled() {
    for (const [index, exchange] of this.exchanges.entries()) {
      const log = clientLog.slice(-8).join('\n');
      const where = `exchange ${index} (${exchange.kind}); client log tail:\n${log}`;
      const events = `${JSON.stringify(exchange.events)} in ${where}`;
      assert.equal(exchange.error, null, `${exchange.error?.message} in ${where}`);
      assert.equal(exchange.status, 200, where);
      assert.equal(exchange.types[0], 'RUN_STARTED', events);
      assert.equal(exchange.types.at(-1), 'RUN_FINISHED', events);
      assert.ok(exchange.finished, where);
    }
    assert.equal(this.#chain, null, 'no frontend tool round trip is left open');
    assert.deepEqual(this.droppedResults, [], 'every result belongs to a call the page holds');
  }
}

// ---------------------------------------------------------------------------------
// Comparing conversations

/** Assistant texts in order, as the user reads them. */
export function assistantTexts(messages) {
  return messages.filter((m) => m.role === 'assistant' && m.content).map((m) => m.content);
}

function callText(call) {
  const args = JSON.stringify(JSON.parse(call.function.arguments || '{}'));
  return `${call.function.name}#${call.id}(${args})`;
}

/**
 * A conversation as comparable lines: user and text-bearing assistant messages by id,
 * tool results by call id. The two names nobody shares are left out: the id of an
 * assistant message without text (the library names it `msg_<time>`) and the id of a
 * tool message (the client's own; relayline stores it as `result_<callId>`).
 */
export function conversation(messages) {
  return messages.map((message) => {
    if (message.role === 'tool') return `tool ${message.toolCallId}: ${message.content}`;
    const named = message.role === 'user' || message.content;
    const calls = (message.toolCalls ?? []).map(callText);
    const head = `${message.role} ${named ? message.id : '-'}: ${message.content ?? ''}`;
    return [head, ...calls].join(' ');
  });
}

/** Every message id appears once. */
export function assertUniqueIds(messages, who) {
  const ids = messages.map((m) => m.id);
  const repeated = ids.filter((id, index) => ids.indexOf(id) !== index);
  assert.deepEqual(repeated, [], `${who} holds a message id more than once`);
}

/** The stored history as the model is given it: messages by id, results by call id. */
export function modelView(historyMessages) {
  return historyMessages.map((m) =>
    m.role === 'tool' ? `tool ${m.toolCallId}` : `${m.role} ${m.id}`,
  );
}

// ---------------------------------------------------------------------------------
// What the backend recorded

/** GET /agui/threads/<id>: `{messages, interrupts, status, before}`. */
export async function storedHistory(threadId) {
  const body = await backend.aguiThread(threadId);
  assert.equal(body.before, null, 'the whole thread fits one page');
  return body;
}

/** GET /api/threads/<id>: the thread's run (runId, status, attempt, interrupt). */
export const storedRun = (threadId) => backend.threadRun(threadId);

/** The model calls the agent made for this thread: {first, lastUser, tools, seen}. */
export const modelCalls = (threadId) => backend.modelCalls(firstMessageId(threadId));

/** Backend executions of the weather tool for `city` (each scenario asks another city). */
export const weatherRuns = (city) => backend.toolRuns('weather', { city });

/**
 * The backend view of a settled thread, checked against the page: the run completed,
 * the stored history holds each message once and reads as the page does, and every
 * model call was given each earlier message once, in stored order.
 */
export async function assertBackendAgrees(chat) {
  const run = await storedRun(chat.threadId);
  assert.equal(run?.status, 'completed', JSON.stringify(run));
  const history = await storedHistory(chat.threadId);
  assert.equal(history.status, null, 'nothing is running or waiting');
  assert.deepEqual(history.interrupts, []);
  assertUniqueIds(history.messages, 'the stored history');
  assertUniqueIds(chat.messages, 'the page');
  assert.deepEqual(conversation(chat.messages), conversation(history.messages));
  const stored = modelView(history.messages);
  for (const call of modelCalls(chat.threadId)) {
    assert.deepEqual(
      call.seen,
      stored.slice(0, call.seen.length),
      'the model saw the stored history',
    );
  }
  return history;
}
