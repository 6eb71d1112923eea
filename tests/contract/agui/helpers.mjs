// Shared plumbing for the AG-UI contract suite: a thin harness around the official
// HttpAgent that records what a user of the client sees (events, messages, HTTP
// statuses, raw SSE frames) and what the backend recorded (run status, history,
// model calls and backend tool executions logged by tests/support/agents_contract.py).
//
// The driver (tests/contract/test_agui_client.py) sets:
//   RELAYLINE_BASE_URL     the web app of the running stack
//   RELAYLINE_TEST_COUNTS  the directory where the test agent writes its JSON-lines logs
//   RELAYLINE_CONTROL_URL  a local endpoint that restarts the Celery worker
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { HttpAgent } from '@ag-ui/client';
import { Backend, firstMessageId, requireEnv, threadIds } from '../shared/stack.mjs';

export { lastAssistantText, waitFor } from '../shared/stack.mjs';

const DRIVER = 'test_agui_client.py';
export const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
export const COUNTS_DIR = requireEnv('RELAYLINE_TEST_COUNTS', DRIVER);
export const CONTROL_URL = requireEnv('RELAYLINE_CONTROL_URL', DRIVER);
const backend = new Backend({ baseUrl: BASE_URL, countsDir: COUNTS_DIR });

/** A thread id unique to this run of the suite (the database outlives a single test). */
export const newThreadId = threadIds('c');

// ---------------------------------------------------------------------------------
// The client harness

/**
 * What one `runAgent` call produced. `events` are the events the client applied (after
 * its own validation, so `error` fields it does not model are already gone); `frames`
 * are the raw SSE `data:` payloads as the server sent them; `error` is what `runAgent`
 * rejected with (HTTP errors carry `status` and `payload`).
 */
class RunRecord {
  constructor() {
    this.events = [];
    this.frames = [];
    this.outcome = null; // "success" | "interrupt" | "cancelled" from onRunFinishedEvent
    this.pending = []; // pendingToolCallIds of a successful RUN_FINISHED
    this.interrupts = []; // interrupts of an interrupt outcome
    this.runError = null; // the RUN_ERROR event
    this.error = null; // the rejection of runAgent
    this.http = null; // status and SSE headers of the response, if a request was sent
    this.framesRead = null; // settles once the raw frames are all read
    this.warnings = []; // what the client warned about (e.g. fields it stripped)
    this.failures = []; // what the client logged as "Agent execution failed"
  }

  get types() {
    return this.events.map((event) => event.type);
  }

  of(type) {
    return this.events.filter((event) => event.type === type);
  }

  framesOf(type) {
    return this.frames.filter((frame) => frame.type === type);
  }

  /** Text streamed in this run, all messages concatenated. */
  get text() {
    return this.of('TEXT_MESSAGE_CONTENT').map((event) => event.delta).join('');
  }

  /** Tool call ids this run published with TOOL_CALL_START, in order. */
  get startedCalls() {
    return this.of('TOOL_CALL_START').map((event) => event.toolCallId);
  }
}

/** Read an SSE body to its end and collect each event's JSON payload. */
async function collectFrames(body, frames) {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  const flush = (block) => {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data) frames.push(JSON.parse(data));
  };
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      const blocks = buffer.split('\n\n');
      buffer = blocks.pop();
      blocks.forEach(flush);
    }
    buffer += decoder.decode();
    if (buffer.trim()) flush(buffer);
  } catch (error) {
    // The client aborted: the frames read so far are what was received.
    if (error?.name !== 'AbortError') throw error;
  }
}

// The client reports to the console; keep its reports with the runs in progress
// instead, so tests can assert on them and expected refusals do not flood the output.
// Runs of several tabs may overlap (double texting): the console is patched while any
// is in progress and restored after the last, and a report goes to each of them.
const capturing = new Set();
let original = null;

function captureConsole(record) {
  if (capturing.size === 0) {
    original = { warn: console.warn, error: console.error };
    console.warn = (...args) => capturing.forEach((run) => run.warnings.push(args.map(String).join(' ')));
    console.error = (...args) =>
      args[0] === 'Agent execution failed:'
        ? capturing.forEach((run) => run.failures.push(args[1]))
        : original.error(...args);
  }
  capturing.add(record);
  return () => {
    capturing.delete(record);
    if (capturing.size === 0) Object.assign(console, original);
  };
}

/**
 * One browser tab: an HttpAgent on one thread, the frontend tool handlers the page
 * registered, and everything observed so far. The official client does not execute
 * tools itself; `answer()` plays the application code that does, on the calls the
 * client reports in `pendingToolCallIds` when RUN_FINISHED arrives without an outcome.
 */
export class Tab {
  #current = null; // the RunRecord of the runAgent in progress

  constructor({ threadId, path = '/agui', handlers = {}, initialMessages, pendingInterrupts } = {}) {
    this.threadId = threadId;
    this.handlers = handlers;
    this.handlerCalls = []; // {callId, name, args} per handler execution
    this.requests = []; // {url, body} of every request the client sent
    this.userMessages = 0;
    this.agent = new HttpAgent({
      url: `${BASE_URL}${path}`,
      threadId,
      initialMessages,
      fetch: (url, init) => this.#fetch(url, init),
    });
    if (pendingInterrupts) this.agent.pendingInterrupts = structuredClone(pendingInterrupts);
  }

  // Tee the response: the client reads one branch, the test keeps the raw frames.
  async #fetch(url, init) {
    this.requests.push({ url, body: JSON.parse(init.body) });
    const response = await fetch(url, init);
    const run = this.#current;
    run.http = {
      status: response.status,
      contentType: response.headers.get('content-type'),
      cacheControl: response.headers.get('cache-control'),
      accelBuffering: response.headers.get('x-accel-buffering'),
      queued: response.headers.get('x-relayline-queued'), // double texting: enqueue
    };
    if (!response.ok || !response.body) return response;
    const [forClient, forTest] = response.body.tee();
    run.framesRead = collectFrames(forTest, run.frames);
    return new Response(forClient, { status: response.status, headers: response.headers });
  }

  get messages() {
    return this.agent.messages;
  }

  /** Add a user message (ids derive from the thread id) and run. */
  async say(content, params = {}, subscriber = {}) {
    this.userMessages += 1;
    this.agent.addMessage({ id: `${this.threadId}-u${this.userMessages}`, role: 'user', content });
    return this.run(params, subscriber);
  }

  /** A user turn: `say(content, params)`, checked to be a complete run (assertFinished). */
  async turn(content, params = {}) {
    const run = await this.say(content, params);
    assertFinished(run);
    return run;
  }

  /** One runAgent call. Never throws: a rejection is kept in `record.error`. */
  async run(params = {}, extraSubscriber = {}) {
    const record = new RunRecord();
    this.#current = record;
    const subscriber = {
      ...extraSubscriber,
      onEvent: (args) => {
        record.events.push(args.event);
        return extraSubscriber.onEvent?.(args);
      },
      onRunFinishedEvent: ({ outcome, pendingToolCallIds, interrupts }) => {
        record.outcome = outcome;
        if (outcome === 'success') record.pending = [...pendingToolCallIds];
        if (outcome === 'interrupt') record.interrupts = structuredClone(interrupts);
      },
      onRunErrorEvent: ({ event }) => {
        record.runError = event;
      },
    };
    const release = captureConsole(record);
    try {
      await this.agent.runAgent(params, subscriber);
    } catch (error) {
      record.error = error;
    } finally {
      release();
    }
    await record.framesRead;
    return record;
  }

  /** The assistant tool call with this id, from the client's messages. */
  toolCall(callId) {
    for (const message of this.agent.messages) {
      const found = message.toolCalls?.find((call) => call.id === callId);
      if (found) return found;
    }
    throw new Error(`the client holds no tool call '${callId}'`);
  }

  /**
   * Execute the page's handlers for `callIds` and add their results as role "tool"
   * messages, as an application does before its next runAgent. Structured values are
   * sent as JSON text (AG-UI tool content is text); a throwing handler becomes a tool
   * message with `error`, which the AG-UI tool message supports.
   */
  async answer(callIds) {
    for (const callId of callIds) {
      const call = this.toolCall(callId);
      const name = call.function.name;
      const args = call.function.arguments ? JSON.parse(call.function.arguments) : {};
      const handler = this.handlers[name];
      assert.ok(handler, `the page has no handler for the frontend tool '${name}'`);
      this.handlerCalls.push({ callId, name, args });
      const message = { id: randomUUID(), role: 'tool', toolCallId: callId };
      try {
        const value = await handler(args, call);
        message.content = typeof value === 'string' ? value : JSON.stringify(value ?? null);
      } catch (error) {
        message.content = `Error: ${error.message}`;
        message.error = error.message;
      }
      this.agent.addMessage(message);
    }
  }

  /** Answer `callIds` with the page's handlers, run again, and check that run finished. */
  async runAnswered(callIds) {
    await this.answer(callIds);
    const run = await this.run();
    assertFinished(run);
    return run;
  }

  /** Handler executions so far, optionally for one tool name. */
  executions(name) {
    return this.handlerCalls.filter((call) => name === undefined || call.name === name);
  }
}

// ---------------------------------------------------------------------------------
// Assertions on what a user sees

/** The run was a complete AG-UI run: RUN_STARTED first and RUN_FINISHED last. */
export function assertFinished(run) {
  const reports = [...run.warnings, ...run.failures.map(String)].join(' | ');
  assert.equal(run.error, null, `runAgent rejected: ${run.error?.message} ${reports}`);
  assert.equal(run.http?.status, 200);
  assert.equal(run.http.contentType, 'text/event-stream');
  assert.equal(run.http.cacheControl, 'no-cache');
  assert.equal(run.http.accelBuffering, 'no');
  assert.equal(run.types[0], 'RUN_STARTED', `events: ${run.types.join(', ')}`);
  assert.equal(run.types.at(-1), 'RUN_FINISHED', `events: ${run.types.join(', ')}`);
  assert.equal(run.runError, null, `unexpected RUN_ERROR; client reports: ${reports}`);
}

/** The request was refused before any SSE header: runAgent rejected with the HTTP error. */
export function assertRefused(run, status, messagePart) {
  assert.ok(run.error, 'runAgent should reject on an HTTP error');
  assert.equal(run.error.status, status, run.error.message);
  assert.equal(run.http?.status, status);
  assert.equal(run.events.length, 0, 'no event reaches the client');
  assert.equal(typeof run.error.payload?.error, 'string');
  assert.ok(
    run.error.payload.error.includes(messagePart),
    `expected '${messagePart}' in '${run.error.payload.error}'`,
  );
}

/** Call ids of the tool messages the page holds, in order: each call once. */
export function answeredCalls(messages) {
  return messages.filter((m) => m.role === 'tool').map((m) => m.toolCallId);
}

// ---------------------------------------------------------------------------------
// What the backend recorded

/** GET /api/threads/<id>: the run (runId, status, attempt, interrupt) or null. */
export const threadRun = (threadId) => backend.threadRun(threadId);

/** GET /agui/threads/<id>: `{messages, interrupts, status, before}` for a reload. */
export const reload = (threadId) => backend.aguiThread(threadId);

/** GET /api/threads/<id> as it answers: `{status, body}`. */
export const threadStatus = (threadId) => backend.get(`/api/threads/${threadId}`);

/** The model calls made for this thread, each with the tool results the model saw. */
export const modelCalls = (threadId) => backend.modelCalls(firstMessageId(threadId));

/** Backend executions of a tool whose arguments match `args` (scenarios use distinct ones). */
export const backendRuns = (tool, args) => backend.toolRuns(tool, args);

/** The thread's run completed after `count` model calls: those calls, in order. */
export const assertCompleted = (threadId, count) => backend.assertCompleted(threadId, count);

/** The run completed after two model calls, the second given exactly `toolResults`. */
export const assertSecondCallSaw = (threadId, toolResults) => backend.assertSecondCallSaw(threadId, toolResults);

/** The run completed with no interrupt and a reload shows nothing open: the reload. */
export const assertCleared = (threadId) => backend.assertCleared(threadId);

/** Ask the pytest process to stop the Celery worker and start a fresh one. */
export async function restartWorker() {
  const response = await fetch(`${CONTROL_URL}/restart-worker`, { method: 'POST' });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body;
}
