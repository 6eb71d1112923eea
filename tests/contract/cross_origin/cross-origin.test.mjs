// Pages on one origin calling relayline on another (issue 33, CORS), in headless Debian
// Chromium: useChat (@ai-sdk/react) and @ag-ui/client's HttpAgent, each sending a bearer
// token (so every call is a preflighted CORS request), with a turn, Stop named by the
// exposed X-Relayline-Stream-Id, and a reload mid-answer that resumes the running answer.
// A page on an origin relayline does not list gets nothing.
//
// The driver (tests/contract/test_cross_origin.py) sets:
//   RELAYLINE_BASE_URL          relayline (RELAYLINE_CORS_ORIGINS lists the page origin)
//   RELAYLINE_PAGE_URL          the built pages' folder on the listed origin
//   RELAYLINE_FOREIGN_PAGE_URL  the same pages on an origin relayline does not list
//   RELAYLINE_TOKEN             a bearer token for the pages and the probes
//   RELAYLINE_COOKIE_HOST_URL   a host application that signs users in with a session
//                               cookie (GET /login?user=) and mounts relayline under /ai,
//                               listing the same page origin
//   RELAYLINE_CHROMIUM          the Chromium executable
//
// Every wait is bounded: Playwright's auto-waiting or polling with a deadline; no sleep.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { requireEnv, threadIds, waitFor } from '../shared/stack.mjs';

const DRIVER = 'test_cross_origin.py';
const BASE_URL = requireEnv('RELAYLINE_BASE_URL', DRIVER);
const PAGE_URL = requireEnv('RELAYLINE_PAGE_URL', DRIVER);
const FOREIGN_PAGE_URL = requireEnv('RELAYLINE_FOREIGN_PAGE_URL', DRIVER);
const TOKEN = requireEnv('RELAYLINE_TOKEN', DRIVER);
const COOKIE_HOST_URL = requireEnv('RELAYLINE_COOKIE_HOST_URL', DRIVER);
const CHROMIUM = requireEnv('RELAYLINE_CHROMIUM', DRIVER);
const TIMEOUT_MS = 30_000;
const AUTH = { Authorization: `Bearer ${TOKEN}` };

/** tests/contract/vercel_agent.py's answers. */
const LONG_TEXT = 'A long answer. '.repeat(340);

const newThreadId = threadIds('x');
assert.notEqual(new URL(PAGE_URL).origin, new URL(BASE_URL).origin, 'the page is on another origin');

let browser;
before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    timeout: TIMEOUT_MS,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
});
after(async () => {
  await browser?.close();
});

/**
 * A tab on `page` of `pages` in `context` (a fresh one unless given), told where
 * relayline is (`api`), with the bearer token unless `token` is null.
 */
async function open(t, pages, page, thread, { resume = false, context, api = BASE_URL, token = TOKEN, credentials } = {}) {
  if (!context) {
    context = await browser.newContext();
    t.after(() => context.close());
  }
  const tab = await context.newPage();
  tab.setDefaultTimeout(TIMEOUT_MS);
  const problems = [];
  tab.on('pageerror', (error) => problems.push(error.message));
  const url = new URL(page, pages);
  url.searchParams.set('api', api);
  if (token) url.searchParams.set('token', token);
  url.searchParams.set('thread', thread);
  if (resume) url.searchParams.set('resume', '1');
  if (credentials) url.searchParams.set('credentials', credentials);
  assert.equal((await tab.goto(url.href, { waitUntil: 'load' })).status(), 200);
  return { tab, url: url.href, problems };
}

/** GET `path` of relayline as the thread's owner: `{status, body}`. */
async function backend(path) {
  const response = await fetch(`${BASE_URL}${path}`, { headers: AUTH });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}

const probe = (tab) => tab.evaluate(() => structuredClone(window.__page));

async function waitForChat(tab, finished) {
  await tab.locator(`#status[data-status="ready"][data-finished="${finished}"]`).waitFor();
}

async function answers(tab) {
  return tab.locator('.msg[data-role="assistant"]').evaluateAll((items) =>
    items.map((item) => [...item.querySelectorAll('p.text')].map((p) => p.textContent).join('')),
  );
}

test('useChat on another origin: a turn, with the stream id and protocol headers readable', async (t) => {
  const threadId = newThreadId('chat');
  const { tab, problems } = await open(t, PAGE_URL, 'index.html', threadId);
  await tab.locator('#status[data-status="ready"]').waitFor();
  await tab.getByLabel('Message').fill('hello from afar');
  await tab.getByRole('button', { name: 'Send' }).click();
  await waitForChat(tab, 1);
  assert.deepEqual(await answers(tab), ['Hello! hello from afar']);

  const page = await probe(tab);
  assert.equal(page.state.error, null);
  const [history, turn] = page.responses;
  assert.deepEqual([history.method, history.status], ['GET', 404], 'a new chat has no history');
  assert.deepEqual([turn.method, turn.status, turn.protocol], ['POST', 200, 'v1']);
  assert.match(turn.streamId ?? '', /.+/, 'X-Relayline-Stream-Id is readable across origins');
  const stored = await backend(`/api/chat/${threadId}`);
  assert.equal(stored.status, 200);
  assert.deepEqual(
    stored.body.messages.map((m) => m.role),
    ['user', 'assistant'],
  );
  assert.deepEqual(problems, []);
});

test('useChat on another origin: Stop names the stream by its exposed id and stops the run', async (t) => {
  const threadId = newThreadId('stop');
  const { tab, problems } = await open(t, PAGE_URL, 'index.html', threadId);
  await tab.locator('#status[data-status="ready"]').waitFor();
  await tab.getByLabel('Message').fill('Tell me a story');
  await tab.getByRole('button', { name: 'Send' }).click();
  await tab.locator('.msg[data-role="assistant"] p.text').first().waitFor();
  await tab.getByRole('button', { name: 'Stop' }).click();
  await tab.waitForFunction(() => window.__page?.stops[0]?.status != null);
  const [stop] = (await probe(tab)).stops;
  assert.match(stop.activeStreamId ?? '', /.+/);
  assert.equal(stop.status, 200);
  assert.deepEqual(stop.answer, { success: true, stopped: true });
  const run = await waitFor(
    async () => {
      const { body } = await backend(`/api/threads/${threadId}`);
      return body?.run?.status === 'cancelled' && body.run;
    },
    { timeoutMs: TIMEOUT_MS, what: 'the run to be cancelled' },
  );
  assert.equal(run.status, 'cancelled');
  assert.deepEqual(problems, []);
});

test('useChat({ resume: true }) on another origin: a reload mid-answer resumes the same answer', async (t) => {
  const threadId = newThreadId('resume');
  const { tab, url, problems } = await open(t, PAGE_URL, 'index.html', threadId, { resume: true });
  await tab.waitForFunction(() => window.__page?.responses.some((r) => r.url.endsWith('/stream') && r.status !== null));
  const resumed = (await probe(tab)).responses.filter((r) => r.url.endsWith('/stream'));
  assert.deepEqual(resumed.map((r) => r.status), [204], 'a new chat has nothing to resume');
  await tab.getByLabel('Message').fill('Give me a long answer');
  await tab.getByRole('button', { name: 'Send' }).click();
  await tab.locator('.msg[data-role="assistant"] p.text', { hasText: 'A long answer.' }).waitFor();
  const seen = (await answers(tab)).at(-1);
  assert.ok(seen.length < LONG_TEXT.length, `reloaded mid-answer (${seen.length} chars seen)`);

  await tab.goto(url, { waitUntil: 'load' }); // the user reloads the page
  await waitForChat(tab, 1);
  assert.deepEqual(await answers(tab), [LONG_TEXT], 'every chunk once, in one message');
  const page = await probe(tab);
  assert.deepEqual(
    page.responses.map((r) => [r.method, r.url.replace(BASE_URL, ''), r.status]),
    [
      ['GET', `/api/chat/${threadId}`, 200],
      ['GET', `/api/chat/${threadId}/stream`, 200],
    ],
    'the reload read history and resumed; it sent no turn',
  );
  assert.equal(page.responses[1].protocol, 'v1');
  assert.equal((await backend(`/api/threads/${threadId}`)).body.run.status, 'completed');
  assert.deepEqual(problems, []);
});

test('@ag-ui/client on another origin: a turn', async (t) => {
  const threadId = newThreadId('agui');
  const { tab, problems } = await open(t, PAGE_URL, 'agui.html', threadId);
  await tab.locator('#state[data-state="ready"]').waitFor();
  const seen = await tab.evaluate(() => window.relayline.say('hello agent'));
  assert.equal(seen.error, null);
  assert.equal(seen.status, 200);
  assert.equal(seen.events[0], 'RUN_STARTED');
  assert.equal(seen.events.at(-1), 'RUN_FINISHED');
  assert.deepEqual(seen.texts, ['Hello! hello agent']);
  assert.equal((await backend(`/api/threads/${threadId}`)).body.run.status, 'completed');
  assert.deepEqual(problems, []);
});

test('@ag-ui/client on another origin: a reload mid-answer follows it through connect', async (t) => {
  const threadId = newThreadId('aguiresume');
  const { tab, url, problems } = await open(t, PAGE_URL, 'agui.html', threadId);
  await tab.locator('#state[data-state="ready"]').waitFor();
  await tab.evaluate(() => {
    void window.relayline.say('Give me a long answer');
  });
  await tab.waitForFunction(() => window.__live?.events.includes('TEXT_MESSAGE_CONTENT'));
  await tab.goto(url, { waitUntil: 'load' }); // the user reloads the page
  await tab.locator('#state[data-state="ready"]').waitFor();
  const seen = await tab.evaluate(() => window.relayline.connect());
  assert.equal(seen.error, null);
  assert.equal(seen.status, 200);
  assert.ok(seen.events.includes('RUN_FINISHED'), JSON.stringify(seen.events.slice(0, 8)));
  assert.deepEqual(seen.texts, [LONG_TEXT], 'the running answer, whole and once');
  assert.equal((await backend(`/api/threads/${threadId}`)).body.run.status, 'completed');
  assert.deepEqual(problems, []);
});

test('a page on an origin relayline does not list gets nothing', async (t) => {
  const threadId = newThreadId('foreign');
  assert.notEqual(new URL(FOREIGN_PAGE_URL).origin, new URL(PAGE_URL).origin);
  const chat = await open(t, FOREIGN_PAGE_URL, 'index.html', threadId);
  await chat.tab.locator('#load-error').waitFor();
  const [history] = (await probe(chat.tab)).responses;
  assert.match(String(history.status), /^failed: /, 'the browser refused to hand over the answer');
  const agui = await open(t, FOREIGN_PAGE_URL, 'agui.html', threadId);
  await agui.tab.locator('#state[data-state="failed"]').waitFor();
  const tried = await agui.tab.evaluate(() => window.relayline.say('hello'));
  assert.match(tried.error ?? '', /fetch/i);
  assert.equal((await backend(`/api/threads/${threadId}`)).status, 404, 'nothing was created');
});

test('a cookie-signed-in host: its page on another origin sends the cookie only with credentials include', async (t) => {
  const context = await browser.newContext();
  t.after(() => context.close());
  const login = await context.newPage();
  const signedIn = await login.goto(`${COOKIE_HOST_URL}/login?user=cookie-ann`);
  assert.equal(await signedIn.text(), 'signed in as cookie-ann');
  const threadId = newThreadId('cookie');
  const options = { context, api: `${COOKIE_HOST_URL}/ai`, token: null };

  const { tab, url, problems } = await open(t, PAGE_URL, 'index.html', threadId, { ...options, credentials: 'include' });
  await tab.locator('#status[data-status="ready"]').waitFor();
  await tab.getByLabel('Message').fill('hello with a cookie');
  await tab.getByRole('button', { name: 'Send' }).click();
  await waitForChat(tab, 1);
  assert.deepEqual(await answers(tab), ['Hello! hello with a cookie']);
  const [history, turn] = (await probe(tab)).responses;
  assert.deepEqual([history.status, turn.status, turn.protocol], [404, 200, 'v1']);
  assert.match(turn.streamId ?? '', /.+/);

  await tab.goto(url, { waitUntil: 'load' }); // the cookie names the same user: the chat is back
  await waitForChat(tab, 0);
  assert.deepEqual(await answers(tab), ['Hello! hello with a cookie']);
  assert.deepEqual((await probe(tab)).responses.map((r) => r.status), [200]);
  assert.deepEqual(problems, []);

  // Without credentials 'include' the browser leaves the cookie out: relayline does not
  // know the user (a 401 the page can read, since relayline's errors carry CORS too).
  const bare = await open(t, PAGE_URL, 'index.html', threadId, options);
  await bare.tab.locator('#load-error').waitFor();
  assert.match(await bare.tab.locator('#load-error').textContent(), /answered 401/);
});
