// Shared plumbing for the Vercel contract suite: headless Debian Chromium (through
// playwright-core) on the React page of src/, which chats with relayline through
// `useChat`, and what the backend recorded (GET /api/threads/<id>, GET /api/chat/<id>,
// the JSON-lines logs of tests/contract/vercel_agent.py).
//
// The driver (tests/contract/test_vercel_client.py) sets:
//   RELAYLINE_BASE_URL     the web app of the running stack
//   RELAYLINE_PAGE_URL     the built page, served on the same origin
//   RELAYLINE_TEST_COUNTS  the directory where the test agent writes its logs
//   RELAYLINE_CHROMIUM     the Chromium executable
//
// Every wait is bounded: Playwright's own auto-waiting (locators, waitForFunction) or
// `waitFor` polling the backend. None is a sleep.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { Backend, requireEnv, threadIds, waitFor as poll } from '../shared/stack.mjs';

const DRIVER = 'test_vercel_client.py';
export const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
export const PAGE_URL = requireEnv('RELAYLINE_PAGE_URL', DRIVER);
export const COUNTS_DIR = requireEnv('RELAYLINE_TEST_COUNTS', DRIVER);
const CHROMIUM = requireEnv('RELAYLINE_CHROMIUM', DRIVER);
const backend = new Backend({ baseUrl: BASE_URL, countsDir: COUNTS_DIR });

/** How long any one wait may take (generous: the machine is sometimes loaded). */
export const TIMEOUT_MS = 30_000;

// Headless, no sandbox (root), and no network beyond 127.0.0.1/localhost. Playwright
// gives every launch a fresh temporary profile (--user-data-dir).
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost',
];

export function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: TIMEOUT_MS });
}

/** A thread id unique to this run of the suite (the database outlives a single test). */
export const newThreadId = threadIds('v');

/**
 * One Chromium for the calling test file: launched before its first test, closed after
 * its last. Returns what a test opens in it, each closed when that test `t` ends.
 */
export function useBrowser() {
  let browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });
  /** A fresh browser context: its own sessionStorage, as a new browser window. */
  async function newContext(t) {
    const context = await browser.newContext();
    t.after(() => context.close());
    return context;
  }
  /** A fresh context with the page on a new thread (`options` as for ChatTab.open). */
  async function openTab(t, scenario, options = {}) {
    const context = await newContext(t);
    const threadId = newThreadId(scenario);
    return { threadId, tab: await ChatTab.open(context, { thread: threadId, ...options }) };
  }
  return { newContext, openTab };
}

// ---------------------------------------------------------------------------------
// The page, as a user drives it

/** One browser tab with the chat page. */
export class ChatTab {
  /**
   * Open the page in a new tab of `context`. `thread` picks the chat (else the tab's
   * sessionStorage, else a fresh id); `eager` selects the eager submission predicate.
   */
  static async open(context, { thread, eager = false, resume = false } = {}) {
    const page = await context.newPage();
    const tab = new ChatTab(page);
    await tab.goto({ thread, eager, resume });
    return tab;
  }

  constructor(page) {
    this.page = page;
    this.problems = []; // uncaught page errors: none is expected, ever
    page.on('pageerror', (error) => this.problems.push(error.message));
    page.setDefaultTimeout(TIMEOUT_MS);
  }

  /** (Re)load the page, as a user reloading or revisiting it in this tab. */
  async goto({ thread, eager = false, resume = false } = {}) {
    const url = new URL(PAGE_URL);
    if (thread) url.searchParams.set('thread', thread);
    if (eager) url.searchParams.set('send', 'eager');
    if (resume) url.searchParams.set('resume', '1'); // useChat({ resume: true })
    const response = await this.page.goto(url.href, { waitUntil: 'load' });
    assert.equal(response.status(), 200);
    await this.page.locator('#status[data-status="ready"]').waitFor();
  }

  async close() {
    await this.page.close();
  }

  async send(text) {
    await this.page.getByLabel('Message', { exact: true }).fill(text);
    await this.page.getByRole('button', { name: 'Send', exact: true }).click();
  }

  /** The card of one tool call. */
  tool(callId) {
    return this.page.locator(`.tool[data-call-id="${callId}"]`);
  }

  /** Wait until the call's part is in `state` (one of the UI tool part states). */
  async waitForTool(callId, state) {
    const part = this.page.locator(`.tool[data-call-id="${callId}"][data-state="${state}"]`);
    await this.#explained(`${callId} in state ${state}`, () => part.waitFor());
  }

  async approve(callId) {
    await this.tool(callId).getByRole('button', { name: 'Approve' }).click();
  }

  async reject(callId, reason) {
    const card = this.tool(callId);
    if (reason) await card.getByLabel('Reason').fill(reason);
    await card.getByRole('button', { name: 'Reject' }).click();
  }

  async release(callId) {
    await this.tool(callId).getByRole('button', { name: 'Release' }).click();
  }

  /**
   * Wait until `finished` responses have ended (useChat's onFinish) and the chat is in
   * `status`, with no request in flight. A continuation the predicate decides to send
   * starts within the same task, so it shows up here as a request in flight.
   */
  async waitForIdle(finished, status = 'ready') {
    const idle = ({ finished, status }) => {
      const probe = window.__relayline;
      return (
        probe?.state.finished === finished &&
        probe.state.status === status &&
        probe.requests.every((request) => request.status !== null)
      );
    };
    await this.waitUntil(`${finished} finished responses and status ${status}`, idle, { finished, status });
    await this.page.locator(`#status[data-status="${status}"][data-finished="${finished}"]`).waitFor();
  }

  /** What the page recorded: `{chatId, requests, decisions, handlerRuns, state}`. */
  async probe() {
    return this.page.evaluate(() => structuredClone(window.__relayline));
  }

  /** The rendered text of the last assistant message (its text parts, joined). */
  async lastAnswer() {
    return this.page
      .locator('.msg[data-role="assistant"]')
      .last()
      .locator('p.text')
      .allTextContents()
      .then((texts) => texts.join(''));
  }

  /** Wait until the last assistant message reads exactly `text`. */
  async waitForAnswer(text) {
    const reads = (text) => {
      const last = [...document.querySelectorAll('.msg[data-role="assistant"]')].at(-1);
      const texts = last ? [...last.querySelectorAll('p.text')].map((p) => p.textContent) : [];
      return texts.join('') === text;
    };
    await this.waitUntil(`the answer ${JSON.stringify(text.slice(0, 80))}`, reads, text);
  }

  /** Wait until `predicate(arg)` holds in the page; on failure, say what it showed. */
  async waitUntil(what, predicate, arg) {
    await this.#explained(what, () => this.page.waitForFunction(predicate, arg));
  }

  /** Run a wait; when it fails, say what the page showed instead. */
  async #explained(what, wait) {
    try {
      return await wait();
    } catch (error) {
      const shown = await this.page
        .evaluate(() => {
          const { requests, decisions, handlerRuns, state } = window.__relayline ?? {};
          const parts = (message) => message.parts.map((p) => [p.type, p.state, p.text ?? p.output]);
          return JSON.stringify({
            status: state?.status,
            finished: state?.finished,
            error: state?.error,
            requests: requests?.map((r) => [r.trigger, r.status]),
            decisions,
            handlerRuns,
            messages: state?.messages.map((m) => [m.role, parts(m)]),
          });
        })
        .catch((failure) => `(page unreadable: ${failure.message})`);
      const problems = this.problems.join(' | ') || 'none';
      error.message += `\nwaiting for ${what}; the page shows: ${shown}; page errors: ${problems}`;
      throw error;
    }
  }

  /** Handler executions per call id in this page. */
  async handlerRuns() {
    return (await this.probe()).handlerRuns;
  }

  /** The id of the thread's first user message: the test agent logs model calls by it. */
  async firstMessageId() {
    const { state } = await this.probe();
    assert.equal(state.messages[0]?.role, 'user');
    return state.messages[0].id;
  }
}

/** The last tool part of `callId` in the page's request `messages` (what was sent). */
export function sentPart(request, callId) {
  const parts = request.messages.flatMap((message) => message.parts);
  return parts.filter((part) => part.toolCallId === callId).at(-1);
}

/** The answers each automatic send carried, in order (the predicate's record). */
export function autoSends(probe) {
  return probe.decisions.filter((decision) => decision.send).map((decision) => decision.answers);
}

/**
 * The parts of UI messages that the live stream and a reload must agree on: ids,
 * roles, text, tool states, inputs, outputs and decisions (the live parts also hold
 * client bookkeeping such as `rawInput`, which a reload does not rebuild).
 */
export function summarize(messages) {
  return messages.map((message) => ({
    id: message.id,
    role: message.role,
    parts: message.parts.map((part) => {
      if (part.type === 'text' || part.type === 'reasoning') return { type: part.type, text: part.text };
      if (!('toolCallId' in part)) return { type: part.type };
      const { type, toolCallId, state, input } = part;
      const summary = { type, toolCallId, state, input };
      if ('output' in part && part.output !== undefined) summary.output = part.output;
      if (part.errorText !== undefined) summary.errorText = part.errorText;
      if (part.approval?.approved !== undefined) summary.approved = part.approval.approved;
      if (part.approval?.reason !== undefined) summary.reason = part.approval.reason;
      return summary;
    }),
  }));
}

// ---------------------------------------------------------------------------------
// What the backend recorded

/** GET /api/threads/<id>: the run (runId, status, attempt, interrupt) or null. */
export const threadRun = (threadId) => backend.threadRun(threadId);

/** GET /api/chat/<id>: the thread as `UIMessage[]`. */
export async function storedMessages(threadId) {
  return (await backend.getOk(`/api/chat/${threadId}`)).messages;
}

/** The model calls of the thread whose first message is `firstMessageId`. */
export const modelCalls = (firstMessageId) => backend.modelCalls(firstMessageId);

/**
 * What the model stream of the thread whose first message is `firstMessageId` went
 * through (tests/contract/vercel_agent.py, StreamCountingProvider): `deltas`, one
 * `{at}` (wall-clock ms) per delta handed to the loop; `closed`, one `{at}` per stream
 * the loop closed before its end.
 */
export function modelStream(firstMessageId) {
  const of = (name) => backend.log(name).filter((entry) => entry.first === firstMessageId);
  return { deltas: of('model.delta.jsonl'), closed: of('model.closed.jsonl') };
}

/** Backend executions of a tool with exactly these arguments (scenarios use distinct ones). */
export const backendRuns = (tool, args) => backend.toolRuns(tool, args);

/** Poll `probe` until it returns a truthy value, bounded by `timeoutMs`. */
export const waitFor = (probe, { timeoutMs = TIMEOUT_MS, ...options } = {}) => poll(probe, { timeoutMs, ...options });

/**
 * The thread's run completed after `count` model calls (of the thread whose first
 * message is `firstMessageId`): those calls, in order.
 */
export const assertCompleted = (threadId, firstMessageId, count) =>
  backend.assertCompleted(threadId, count, firstMessageId);

/** The run completed after two model calls, the second given exactly `toolResults`. */
export const assertSecondCallSaw = (threadId, firstMessageId, toolResults) =>
  backend.assertSecondCallSaw(threadId, toolResults, firstMessageId);

/** The stored thread reads as `probe` (what the page held) shows it; the page raised no error. */
export async function assertStoredAsShown(tab, threadId, probe) {
  assert.deepEqual(summarize(await storedMessages(threadId)), summarize(probe.state.messages));
  assert.deepEqual(tab.problems, []);
}
