// Shared plumbing for the CopilotKit contract suite. The page side is CopilotKit's own
// headless client (@copilotkit/core, the engine under @copilotkit/react-core v2); the
// server side is a CopilotKit v2 runtime (bridge.mjs) whose agent is an AG-UI HttpAgent
// pointed at relayline's POST /agui. Nothing here speaks AG-UI to relayline directly:
// every request goes page -> runtime bridge -> POST /agui.
//
// The driver (tests/contract/test_copilotkit.py) sets:
//   RELAYLINE_BASE_URL     the web app of the running stack
//   RELAYLINE_TEST_COUNTS  where the test agent (tests/contract/copilotkit_agent.py) logs
//                          model calls and backend tool executions as JSON lines
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CopilotKitCore, ɵInterruptState } from '@copilotkit/core';
import { Backend, firstMessageId, readJsonLines, requireEnv, threadIds } from '../shared/stack.mjs';

export { lastAssistantText } from '../shared/stack.mjs';

const DRIVER = 'test_copilotkit.py';
export const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
export const COUNTS_DIR = requireEnv('RELAYLINE_TEST_COUNTS', DRIVER);
const backend = new Backend({ baseUrl: BASE_URL, countsDir: COUNTS_DIR });
const BRIDGE = join(dirname(fileURLToPath(import.meta.url)), 'bridge.mjs');
/** The runtime's name for relayline's agent (AGENT_ID in bridge.mjs). */
const RUNTIME_AGENT_ID = 'default';
/** ms a bridge process may take to listen (a loaded 2-core machine imports slowly) */
const BRIDGE_START_TIMEOUT_MS = 60_000;

/** A thread id unique to this run of the suite (the database outlives a single test). */
export const newThreadId = threadIds('ck-');

// ---------------------------------------------------------------------------------
// The runtime bridge, one process per test file (its memory is per process)

/**
 * Start `node bridge.mjs` against the stack's POST /agui and wait for the line it
 * prints once it listens. `forwarded(threadId)` lists the requests its HttpAgent sent
 * to relayline for that thread ({url, status, body: RunAgentInput}); `stop()` ends the
 * process by its PID. `connect: 'relayline'` gives the runtime bridge.mjs's
 * RelaylineAgentRunner (its connect route asks relayline), else the default
 * InMemoryAgentRunner.
 */
export async function startBridge({ connect = 'memory' } = {}) {
  const wireLog = join(COUNTS_DIR, `bridge-${randomUUID().slice(0, 8)}.jsonl`);
  const args = [BRIDGE, '--agui', `${BASE_URL}/agui`, '--wire-log', wireLog, '--connect', connect];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, COPILOTKIT_TELEMETRY_DISABLED: 'true', DO_NOT_TRACK: '1' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => {
    throw new Error(`the bridge exited before listening (code ${code}, signal ${signal})`);
  });
  const lines = createInterface({ input: child.stdout });
  const ready = once(lines, 'line').then(([line]) => JSON.parse(line));
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the bridge did not listen within ${BRIDGE_START_TIMEOUT_MS} ms`)),
      BRIDGE_START_TIMEOUT_MS,
    );
  });
  let announced;
  try {
    announced = await Promise.race([ready, exited, timeout]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
  exited.catch(() => {}); // from here on an exit is the expected end of stop()
  return {
    url: announced.url,
    pid: announced.pid,
    forwarded: (threadId) =>
      readJsonLines(wireLog).filter((request) => request.body.threadId === threadId),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = once(child, 'exit');
      process.kill(announced.pid, 'SIGTERM');
      await gone;
    },
  };
}

/**
 * One bridge for the calling test file: started before its first test, stopped after
 * its last. The handle stands for it in `new Page({bridge})` and `bridge.forwarded()`.
 */
export function useBridge() {
  let bridge;
  before(async () => {
    bridge = await startBridge();
  });
  after(() => bridge?.stop());
  return {
    get url() {
      return bridge.url;
    },
    forwarded: (threadId) => bridge.forwarded(threadId),
  };
}

// ---------------------------------------------------------------------------------
// The page: a CopilotKit client on one thread

/**
 * The interrupt handling of @copilotkit/react-core v2's `useInterrupt`, without React:
 * the same subscriptions on the agent and the same framework-neutral state machine
 * (`ɵInterruptState` from @copilotkit/core). An interrupt becomes pending when a run
 * (or a connect replay) finalizes after a RUN_FINISHED with an interrupt outcome;
 * `resolve` answers it, and once every open interrupt is answered one
 * `copilotkit.runAgent({agent, resume, runId})` sends the AG-UI resume array.
 */
class InterruptHandler {
  #state = new ɵInterruptState();
  #runIds = new Map(); // interrupt id -> the run it came from
  #copilotkit;
  #agent;
  pending = null;

  constructor(copilotkit, agent) {
    this.#copilotkit = copilotkit;
    this.#agent = agent;
    let finishedWith = null;
    agent.subscribe({
      onRunStartedEvent: () => {
        finishedWith = null;
        this.#runIds.clear();
        this.#state.clear();
        this.pending = null;
      },
      onRunFinishedEvent: ({ outcome, interrupts, input }) => {
        if (outcome !== 'interrupt') return;
        for (const interrupt of interrupts) this.#runIds.set(interrupt.id, input.runId);
        finishedWith = interrupts;
      },
      onRunFinalized: () => {
        if (finishedWith?.length) {
          this.#state.setStandard(finishedWith);
          this.pending = this.#state.pending;
        }
        finishedWith = null;
      },
      onRunFailed: () => {
        finishedWith = null;
        this.#runIds.clear();
        this.#state.clear();
        this.pending = null;
      },
    });
  }

  /** The open interrupts, as a `useInterrupt` render function receives them. */
  get interrupts() {
    return this.pending?.kind === 'standard' ? this.pending.interrupts : [];
  }

  resolve(payload, interruptId) {
    return this.#respond(this.#state.resolve(payload, interruptId));
  }

  async #respond(decision) {
    assert.equal(decision.kind, 'resume', `useInterrupt would not resume: ${decision.kind}`);
    const runId = decision.resume.map((entry) => this.#runIds.get(entry.interruptId)).find(Boolean);
    for (const { toolCallId, content } of decision.toolResults) {
      this.#agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId, content });
    }
    return this.#copilotkit.runAgent({
      agent: this.#agent,
      resume: decision.resume,
      ...(runId !== undefined ? { runId } : {}),
    });
  }
}

/** What one user action (send, approve, open) made the page go through. */
class Turn {
  constructor() {
    this.events = []; // AG-UI events the page applied, follow-up runs included
    this.errors = []; // {code, message} CopilotKit reported through onError
    this.interrupts = []; // the interrupts pending once the action settled
  }

  get types() {
    return this.events.map((event) => event.type);
  }

  of(type) {
    return this.events.filter((event) => event.type === type);
  }

  /** Runs the page went through: the first one plus CopilotKit's follow-up runs. */
  get runs() {
    return this.of('RUN_STARTED').length;
  }

  /** Tool call ids published in this turn (TOOL_CALL_START), in order. */
  get startedCalls() {
    return this.of('TOOL_CALL_START').map((event) => event.toolCallId);
  }
}

/**
 * One browser tab of a CopilotKit application, without React: a CopilotKitCore with
 * the runtime bridge as its runtimeUrl, a proxied agent for the runtime's agent on one
 * thread, the frontend tools the page mounted (each handler execution is recorded) and
 * the page's `useInterrupt`.
 */
export class Page {
  #turn = null;

  constructor({ bridge, threadId, tools = [] }) {
    this.threadId = threadId;
    this.handlerCalls = []; // {name, args, callId} per handler execution
    this.userMessages = 0;
    this.copilotkit = new CopilotKitCore({ runtimeUrl: bridge.url });
    // Outside a browser the core does not fetch the runtime's /info by itself; a
    // proxied agent asks for it on its first request and then talks REST to the runtime.
    const { agent } = this.copilotkit.registerProxiedAgent({
      agentId: RUNTIME_AGENT_ID,
      runtimeAgentId: RUNTIME_AGENT_ID,
    });
    agent.threadId = threadId;
    this.agent = agent;
    this.interrupt = new InterruptHandler(this.copilotkit, agent);
    this.copilotkit.subscribe({
      onError: ({ error, code }) => this.#turn?.errors.push({ code, message: error.message }),
    });
    agent.subscribe({ onEvent: ({ event }) => void this.#turn?.events.push(event) });
    for (const tool of tools) this.mount(tool);
  }

  /** Register a frontend tool, as `useFrontendTool` does when its component mounts. */
  mount({ name, description, parameters, handler }) {
    this.copilotkit.addTool({
      name,
      description,
      parameters,
      handler: async (args, { toolCall }) => {
        this.handlerCalls.push({ name, args, callId: toolCall.id });
        return handler(args);
      },
    });
  }

  /** Remove a frontend tool, as `useFrontendTool` does when its component unmounts. */
  unmount(name) {
    this.copilotkit.removeTool(name);
  }

  async #record(action, turn = new Turn()) {
    this.#turn = turn;
    try {
      await action();
    } finally {
      this.#turn = null;
    }
    turn.interrupts = structuredClone(this.interrupt.interrupts);
    return turn;
  }

  /** The user sends a message: CopilotKit runs the agent, and follow-up runs after tools. */
  say(content) {
    return this.sayLive(content).done;
  }

  /**
   * The user sends a message and goes on while it streams: `turn` fills as events
   * arrive, `done` resolves with it once CopilotKit's run settles.
   */
  sayLive(content) {
    this.userMessages += 1;
    const id = `${this.threadId}-u${this.userMessages}`;
    this.agent.addMessage({ id, role: 'user', content });
    const turn = new Turn();
    const done = this.#record(() => this.copilotkit.runAgent({ agent: this.agent }), turn);
    return { turn, done };
  }

  /** The user presses Stop: CopilotKit's stopAgent, which posts the runtime's stop route. */
  stop() {
    this.copilotkit.stopAgent({ agent: this.agent });
  }

  /** The page loads an existing thread: CopilotKit connects to the runtime's replay. */
  open() {
    return this.#record(() => this.copilotkit.connectAgent({ agent: this.agent }));
  }

  /** The user answers the open confirmation interrupt. */
  approve(interruptId) {
    return this.#record(() => this.interrupt.resolve({ approved: true }, interruptId));
  }

  reject(reason, interruptId) {
    return this.#record(() => this.interrupt.resolve({ approved: false, reason }, interruptId));
  }

  /**
   * Resume with an explicit AG-UI resume array through CopilotKit's public runAgent,
   * for interrupts the page learnt of elsewhere (GET /agui/threads/<id>).
   */
  resume(resume) {
    return this.#record(() => this.copilotkit.runAgent({ agent: this.agent, resume }));
  }

  get messages() {
    return this.agent.messages;
  }

  /** Handler executions so far, optionally of one tool. */
  executions(name) {
    return this.handlerCalls.filter((call) => name === undefined || call.name === name);
  }
}

// ---------------------------------------------------------------------------------
// Assertions on what a user sees

/** Every run of the turn started and finished, and CopilotKit reported no error. */
export function assertSettled(turn) {
  assert.deepEqual(turn.errors, [], 'CopilotKit reported errors');
  assert.ok(turn.runs > 0, 'no run reached the page');
  assert.equal(turn.of('RUN_FINISHED').length, turn.runs, `events: ${turn.types.join(', ')}`);
  assert.equal(turn.of('RUN_ERROR').length, 0, 'unexpected RUN_ERROR');
}

/** [role, text or toolCallId] of the messages a user reads (activities are chips). */
export function transcript(messages) {
  return messages
    .filter((m) => m.role !== 'activity' && m.role !== 'reasoning')
    .filter((m) => m.role !== 'assistant' || m.content || m.toolCalls?.length)
    .map((m) => [m.role, m.role === 'tool' ? m.toolCallId : m.content || null]);
}

/** The tool calls the page holds, by id, with their parsed arguments. */
export function heldCalls(messages) {
  return messages.flatMap((m) =>
    (m.toolCalls ?? []).map((call) => [
      call.id,
      call.function.name,
      call.function.arguments ? JSON.parse(call.function.arguments) : {},
    ]),
  );
}

/** [toolCallId, content] of the tool messages the page holds. */
export function toolResults(messages) {
  return messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content]);
}

// ---------------------------------------------------------------------------------
// What the backend recorded

/** GET /api/threads/<id>: the durable run (runId, status, attempt, interrupt) or null. */
export const threadRun = (threadId) => backend.threadRun(threadId);

/** GET /agui/threads/<id>: `{messages, interrupts, status, before}` for a reload. */
export const reload = (threadId) => backend.aguiThread(threadId);

/** The model calls made for this thread, each with the tools offered and the results seen. */
export const modelCalls = (threadId) => backend.modelCalls(firstMessageId(threadId));

/**
 * What the model streams of this thread went through (StreamCountingProvider in
 * tests/contract/vercel_agent.py): `deltas`, one `{at}` (wall-clock ms) per delta handed
 * to the loop; `closed`, one `{at}` per stream the loop closed before its end.
 */
export function modelStream(threadId) {
  const first = firstMessageId(threadId);
  const of = (name) => backend.log(name).filter((entry) => entry.first === first);
  return { deltas: of('model.delta.jsonl'), closed: of('model.closed.jsonl') };
}

/** Backend executions of a tool with exactly these arguments (scenarios use distinct ones). */
export const backendRuns = (tool, args) => backend.toolRuns(tool, args);

/** The thread's run completed after `count` model calls: those calls, in order. */
export const assertCompleted = (threadId, count) => backend.assertCompleted(threadId, count);

/** The run completed after two model calls, the second given exactly `toolResults`. */
export const assertSecondCallSaw = (threadId, toolResults) => backend.assertSecondCallSaw(threadId, toolResults);

/** The run completed with no interrupt and a reload shows nothing open: the reload. */
export const assertCleared = (threadId) => backend.assertCleared(threadId);
