// Shared plumbing for the assistant-ui contract suite: headless Debian Chromium (through
// playwright-core) on the React page of src/ (assistant-ui over its AI SDK runtime,
// with relayline's recipes in src/relayline.js), and what the backend recorded.
//
// The driver (tests/contract/test_assistant_ui.py) sets RELAYLINE_BASE_URL (the web
// app), RELAYLINE_PAGE_URL (the built page on the same origin), RELAYLINE_TEST_COUNTS
// (the test agent's logs) and RELAYLINE_CHROMIUM. Every wait is bounded (Playwright's
// auto-waiting, waitForFunction, or polling the backend); none is a sleep.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { Backend, requireEnv, threadIds, waitFor as poll } from '../shared/stack.mjs';

const DRIVER = 'test_assistant_ui.py';
const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
const PAGE_URL = requireEnv('RELAYLINE_PAGE_URL', DRIVER);
const COUNTS_DIR = requireEnv('RELAYLINE_TEST_COUNTS', DRIVER);
const CHROMIUM = requireEnv('RELAYLINE_CHROMIUM', DRIVER);
export const backend = new Backend({ baseUrl: BASE_URL, countsDir: COUNTS_DIR });

/** How long any one wait may take (generous: the machine is sometimes loaded). */
export const TIMEOUT_MS = 30_000;

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

/** A thread id unique to this run of the suite; `__LOCALID_`-like, as assistant-ui's own ids are. */
const newThreadId = threadIds('__aui_');

/** One Chromium per test file; `openTab(t, scenario, options)` opens the page on a new thread. */
export function useBrowser() {
  let browser;
  before(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: TIMEOUT_MS });
  });
  after(async () => {
    await browser?.close();
  });
  async function openTab(t, scenario, options = {}) {
    const context = await browser.newContext();
    t.after(() => context.close());
    const threadId = newThreadId(scenario);
    const tab = new ChatTab(await context.newPage(), threadId);
    await tab.goto(options);
    return { threadId, tab };
  }
  return { openTab };
}

/** The page in one tab, as a user drives it. */
export class ChatTab {
  constructor(page, threadId) {
    this.page = page;
    this.threadId = threadId;
    this.problems = []; // uncaught page errors: none is expected, ever
    page.on('pageerror', (error) => this.problems.push(error.message));
    page.setDefaultTimeout(TIMEOUT_MS);
  }

  /**
   * (Re)load the page on this thread; `stop` and `resume` pick the recipe
   * (src/relayline.js); `page: 'agui'` opens the AG-UI runtime's page instead.
   */
  async goto({ stop = 'route', resume = false, page = 'index' } = {}) {
    const url = new URL(PAGE_URL.replace(/index\.html$/, `${page}.html`));
    url.searchParams.set('thread', this.threadId);
    url.searchParams.set('stop', stop);
    if (resume) url.searchParams.set('resume', '1');
    const response = await this.page.goto(url.href, { waitUntil: 'load' });
    assert.equal(response.status(), 200);
    await this.page.locator('#status').waitFor();
  }

  async send(text) {
    await this.page.getByLabel('Message', { exact: true }).fill(text);
    await this.page.getByRole('button', { name: 'Send', exact: true }).click();
  }

  /** assistant-ui's own Stop button (`ComposerPrimitive.Cancel`). */
  async stop() {
    await this.page.getByRole('button', { name: 'Stop', exact: true }).click();
  }

  tool(callId) {
    return this.page.locator(`.tool[data-call-id="${callId}"]`);
  }

  /** The texts of the thread's messages, as rendered: `[role, text]` each. */
  async shown() {
    return this.page.evaluate(() =>
      [...document.querySelectorAll('.msg')].map((m) => [
        m.dataset.role,
        [...m.querySelectorAll('p.text')].map((p) => p.textContent).join(''),
      ]),
    );
  }

  async lastAnswer() {
    const shown = await this.shown();
    return shown.filter(([role]) => role === 'assistant').at(-1)?.[1] ?? '';
  }

  /** Wait until the last assistant message reads exactly `text`. */
  async waitForAnswer(text) {
    const reads = (text) => {
      const last = [...document.querySelectorAll('.msg[data-role="assistant"]')].at(-1);
      return last ? [...last.querySelectorAll('p.text')].map((p) => p.textContent).join('') === text : false;
    };
    await this.#explained(`the answer ${JSON.stringify(text.slice(0, 80))}`, () => this.page.waitForFunction(reads, text));
  }

  /** Wait until the thread is idle (assistant-ui not running, no request in flight). */
  async waitForIdle() {
    const idle = () => {
      const probe = window.__relayline;
      return (
        document.querySelector('#status')?.dataset.running === 'false' &&
        probe?.state.status === 'ready' &&
        probe.requests.every((request) => request.status !== null)
      );
    };
    await this.#explained('the thread idle', () => this.page.waitForFunction(idle));
  }

  async probe() {
    return this.page.evaluate(() => structuredClone(window.__relayline));
  }

  async waitUntil(what, predicate, arg) {
    await this.#explained(what, () => this.page.waitForFunction(predicate, arg));
  }

  async #explained(what, wait) {
    try {
      return await wait();
    } catch (error) {
      const shown = await this.shown().catch((failure) => `(page unreadable: ${failure.message})`);
      const probe = await this.probe().catch(() => null);
      error.message +=
        `\nwaiting for ${what}; the page shows ${JSON.stringify(shown)}; ` +
        `requests ${JSON.stringify(probe?.requests?.map((r) => [r.trigger, r.status]))}, ` +
        `chat ${probe?.state.status} ${probe?.state.error}, its last message's parts ` +
        `${JSON.stringify(probe?.state.messages.at(-1)?.parts.map((p) => [p.type, p.state, p.approval]))}; ` +
        `page errors: ${this.problems.join(' | ') || 'none'}`;
      throw error;
    }
  }
}

/** GET /api/threads/<id>: the run or null. */
export const threadRun = (threadId) => backend.threadRun(threadId);

/** GET /api/chat/<id>: the thread as `UIMessage[]`. */
export async function storedMessages(threadId) {
  return (await backend.getOk(`/api/chat/${threadId}`)).messages;
}

/** Poll until `probe` is truthy, bounded. */
export const waitFor = (probe, { timeoutMs = TIMEOUT_MS, ...options } = {}) => poll(probe, { timeoutMs, ...options });

/** Wait until the thread's run has `status`: the run. */
export const waitForRun = (threadId, status) =>
  waitFor(
    async () => {
      const run = await threadRun(threadId);
      return run?.status === status && run;
    },
    { what: `the run to be ${status}` },
  );

/** What the model stream of the thread whose first message is `first` went through (tests/contract/vercel_agent.py). */
export function modelStream(first) {
  const of = (name) => backend.log(name).filter((entry) => entry.first === first);
  return { deltas: of('model.delta.jsonl'), closed: of('model.closed.jsonl') };
}

/** The id of the thread's first (user) message, as the page holds it. */
export async function firstMessageId(tab) {
  const { state } = await tab.probe();
  assert.equal(state.messages[0]?.role, 'user');
  return state.messages[0].id;
}

export const textOf = (message) =>
  message.parts.filter((part) => part.type === 'text').map((part) => part.text).join('');
