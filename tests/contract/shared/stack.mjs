// Plumbing every contract suite shares: the environment its pytest driver sets, thread
// ids unique to a run of the suite, probes of what the running stack recorded (its HTTP
// read endpoints and the JSON-lines logs the test agents write), bounded polling, and
// reading a conversation as its user does.
//
// Each suite (agui/, copilotkit/, lm-agui/, push/, vercel/) is its own npm package and
// imports this file by relative path. Node resolves bare specifiers from the importing
// file's own folder, and this folder has no node_modules: so this module uses Node's
// built-ins only, and whatever needs a suite's packages stays in that suite's helpers.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

/** How long one read of the stack may take (generous: the machine is sometimes loaded). */
const READ_TIMEOUT_MS = 60_000;

/**
 * The value of an environment variable the suite's pytest driver sets.
 * @param {string} name
 * @param {string} driver the driver's file name under tests/contract/, for the error
 */
export function requireEnv(name, driver) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite through tests/contract/${driver}`);
  return value;
}

/**
 * A function giving thread ids unique to this run of the suite (the database outlives a
 * single test): `${prefix}${scenario}-<8 hex>`.
 * @param {string} prefix
 */
export function threadIds(prefix) {
  return (/** @type {string | number} */ scenario) => `${prefix}${scenario}-${randomUUID().slice(0, 8)}`;
}

/** The id of a thread's first user message (`<threadId>-u1`): the test agents log model calls by it. */
export const firstMessageId = (/** @type {string} */ threadId) => `${threadId}-u1`;

/** The JSON value of every line of a JSON-lines file; none while the file does not exist. */
export function readJsonLines(path) {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * What the running stack recorded: its read endpoints under `baseUrl`, and the logs the
 * suite's test agent writes in `countsDir` (`<modelLog>` per model call, with `first`,
 * the id of the thread's first user message; `<toolPrefix>.<tool>.jsonl` per backend
 * tool execution, holding its arguments).
 */
export class Backend {
  constructor({ baseUrl, countsDir, modelLog = 'model.jsonl', toolPrefix = 'tool' }) {
    this.baseUrl = baseUrl;
    this.countsDir = countsDir;
    this.modelLog = modelLog;
    this.toolPrefix = toolPrefix;
  }

  /** GET `path` of the web app: `{status, body}` (the body parsed as JSON). */
  async get(path) {
    const response = await fetch(`${this.baseUrl}${path}`, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
    return { status: response.status, body: await response.json() };
  }

  /** GET `path`, which must answer 200: its JSON body. */
  async getOk(path) {
    const { status, body } = await this.get(path);
    assert.equal(status, 200, `GET ${path}: ${JSON.stringify(body)}`);
    return body;
  }

  /** GET /api/threads/<id>: the durable run (runId, status, attempt, interrupt) or null. */
  async threadRun(threadId) {
    return (await this.getOk(`/api/threads/${threadId}`)).run;
  }

  /** GET /agui/threads/<id>: `{messages, interrupts, status, before}`, what a reload reads. */
  aguiThread(threadId) {
    return this.getOk(`/agui/threads/${threadId}`);
  }

  /** The entries of one of the test agent's logs. */
  log(name) {
    return readJsonLines(join(this.countsDir, name));
  }

  /** The model calls of the thread whose first user message is `firstId`. */
  modelCalls(firstId) {
    return this.log(this.modelLog).filter((call) => call.first === firstId);
  }

  /** Backend executions of `tool` with exactly these arguments (scenarios use distinct ones). */
  toolRuns(tool, args) {
    return this.log(`${this.toolPrefix}.${tool}.jsonl`).filter((entry) => isDeepStrictEqual(entry, args));
  }

  /**
   * The thread's run completed after `count` model calls (of the thread whose first
   * user message is `firstId`): those calls, in order.
   */
  async assertCompleted(threadId, count, firstId = firstMessageId(threadId)) {
    assert.equal((await this.threadRun(threadId)).status, 'completed');
    const calls = this.modelCalls(firstId);
    assert.equal(calls.length, count);
    return calls;
  }

  /**
   * The thread's run completed after two model calls, the second one given exactly
   * `toolResults` (`{callId, name, content, isError}` each, in order).
   */
  async assertSecondCallSaw(threadId, toolResults, firstId = firstMessageId(threadId)) {
    const calls = await this.assertCompleted(threadId, 2, firstId);
    assert.deepEqual(calls[1].toolResults, toolResults);
  }

  /**
   * The thread is done with: its run completed waiting for nothing, and a reload
   * (GET /agui/threads/<id>) shows nothing running and no open interrupt. The reload.
   */
  async assertCleared(threadId) {
    const run = await this.threadRun(threadId);
    assert.equal(run.status, 'completed');
    assert.equal(run.interrupt, null);
    const page = await this.aguiThread(threadId);
    assert.equal(page.status, null);
    assert.deepEqual(page.interrupts, []);
    return page;
  }
}

/** Poll `probe` until it returns a truthy value, bounded by `timeoutMs`. */
export async function waitFor(probe, { timeoutMs = 30_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * The last assistant text of AG-UI messages, as the user reads it; with `sinceUser`,
 * none when the last user message has no answer with text yet.
 */
export function lastAssistantText(messages, { sinceUser = false } = {}) {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message.role === 'assistant' && message.content) return message.content;
    if (sinceUser && message.role === 'user') return null;
  }
  return null;
}
