/**
 * Drives the demo page at "/" in headless Debian Chromium with playwright-core.
 *
 *   node demo.test.mjs <base url> <screenshot.png>                the whole relay journey
 *   node demo.test.mjs <base url> <screenshot.png> <delivery>...  one conversation each
 *
 * Run by tests/integration/test_demo_page.py against a real stack (web app, Celery
 * worker, Redis, SQLite; for push, a real soketi and a real Mercure hub) serving the
 * demo agent (relayline/demo.py). Without deliveries it walks the relay journey (backend
 * tool, frontend tool, approve, reload mid-approval, reject, new conversation, stop,
 * the conversation list, then resume: a reload mid-answer, a second tab following the
 * running answer, a dropped connection) on a server that offers no push delivery. With deliveries (relay, mercure, pusher) it
 * starts a fresh conversation per delivery, chooses it, and drives a frontend tool and
 * an approval through it, watching the page's network traffic to prove which way the
 * output came; each gets a screenshot `<screenshot>-<delivery>.png`.
 *
 * Every wait is a Playwright auto-waiting locator or event with a bounded timeout: no
 * sleeps. Prints one `RESULT {...}` line (JSON) that the Python side checks against the
 * server's history. Exit code 0 means every step passed.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [baseUrl, screenshotPath, ...deliveries] = process.argv.slice(2);
const LABELS = { relay: 'Relay (SSE)', pusher: 'Pusher', mercure: 'Mercure' };
if (!baseUrl || !screenshotPath || deliveries.some((d) => !(d in LABELS))) {
  console.error('usage: node demo.test.mjs <base url> <screenshot.png> [relay|mercure|pusher ...]');
  process.exit(2);
}

// Bounded waits: a step that does not happen in this time fails with Playwright's
// own message (which says what it waited for).
const TIMEOUT_MS = 20_000;

// Flags from the project's notes on Chromium here: headless, no sandbox (root), and no
// network beyond 127.0.0.1/localhost, so the page cannot reach any outside host.
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

/** The assistant's own words (not tool cards) that contain `text`. */
const answer = (page, text) => page.locator('.msg.assistant p.text', { hasText: text });
const toolCard = (page, name) => page.locator(`.tool[data-tool="${name}"]`);
/** The demo agent's answer once an approval is settled (relayline/demo_script.json). */
const SETTLED = 'That is settled: the call above says what happened to report.pdf.';
/** Collapsed cards of calls a person decided on, by outcome (approved, rejected, ...). */
const decided = (page, outcome) =>
  page.locator('.tool.decided', { has: page.locator(`.tool-decision[data-outcome="${outcome}"]`) });

async function send(page, text) {
  const prompt = page.getByLabel('Message', { exact: true });
  await prompt.fill(text); // waits until the composer is enabled again
  await page.getByRole('button', { name: 'Send' }).click();
}

/** Open the page; returns its title and thread id. */
async function open(page) {
  const loaded = await page.goto(baseUrl, { waitUntil: 'load' });
  assert.equal(loaded.status(), 200);
  const title = await page.title();
  assert.equal(title, 'relayline demo');
  const threadId = await currentThread(page);
  assert.match(threadId, /^demo-[0-9a-f]{24}$/);
  return { title, threadId };
}

async function currentThread(page) {
  // The page names its thread when its start-up (which awaits GET demo/config) is done;
  // 'load' does not wait for a module's top-level await.
  await page.waitForFunction(() => document.querySelector('#thread-id')?.textContent.trim());
  return (await page.locator('#thread-id').textContent()).trim();
}

/** The whole relay journey, on a server that offers no push delivery. */
async function journey(page) {
  const { title, threadId } = await open(page);

  // Delivery: relay is the one choice; the push variants are shown, disabled, explained.
  await page.getByText('This server offers relay delivery only.').waitFor();
  assert.equal(await page.getByLabel('Relay (SSE)').isChecked(), true);
  assert.equal(await page.getByLabel('Pusher').isDisabled(), true);
  assert.equal(await page.getByLabel('Mercure').isDisabled(), true);
  step('delivery selector');

  // A backend tool: live activity ends "ok · N ms", then the streamed answer.
  await send(page, 'What is the weather?');
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
  await toolCard(page, 'get_weather')
    .locator('.tool-status[data-status="ok"]', { hasText: /^ok · \d+ ms$/ })
    .waitFor();
  step('backend tool and streamed text');

  // A frontend tool: the page answers read_title with document.title by itself.
  await send(page, 'What is the page title?');
  await answer(page, `The title of this page is "${title}".`).waitFor();
  await toolCard(page, 'read_title').getByText('answered by the page').waitFor();
  const reasoning = page.locator('details.reasoning', {
    hasText: 'The page title lives in the browser',
  });
  assert.equal(await reasoning.getAttribute('open'), null, 'reasoning starts collapsed');
  await reasoning.locator('summary').click();
  await reasoning.locator('.reasoning-text').waitFor({ state: 'visible' });
  step('frontend tool and collapsible reasoning');

  // Approval: the card appears, Approve runs the tool and the run continues.
  await send(page, 'Delete report.pdf');
  let card = page.getByRole('group', { name: 'Approval needed' });
  await card.waitFor();
  const composerLocked = await page.getByLabel('Message', { exact: true }).isDisabled();
  assert.equal(composerLocked, true, 'no new turn while a decision is open');
  await card.getByRole('button', { name: 'Approve' }).click();
  await answer(page, SETTLED).waitFor();
  await decided(page, 'approved').filter({ hasText: 'report.pdf deleted' }).waitFor();
  step('approve');

  // Reload mid-approval: the conversation and the pending card come back from the server.
  await send(page, 'Delete report.pdf');
  // The new card is the one whose Approve button is still enabled.
  const undecided = page
    .getByRole('group', { name: 'Approval needed' })
    .filter({ has: page.getByRole('button', { name: 'Approve', disabled: false }) });
  await undecided.waitFor();
  await page.reload({ waitUntil: 'load' });
  const keptId = await currentThread(page);
  assert.equal(keptId, threadId, 'thread id kept');
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor(); // history redrawn
  await decided(page, 'approved').filter({ hasText: 'report.pdf deleted' }).waitFor();
  card = page.getByRole('group', { name: 'Approval needed' });
  await card.waitFor(); // exactly one: a strict locator fails if the old card came back too
  const reason = 'keep it for the audit';
  await card.getByLabel('Reason (optional)').fill(reason);
  await card.getByRole('button', { name: 'Reject' }).click();
  await answer(page, SETTLED).nth(1).waitFor();
  await decided(page, 'rejected').filter({ hasText: reason }).waitFor();
  step('reload mid-approval, reject with a reason');

  await page.screenshot({ path: screenshotPath, fullPage: true });
  step('screenshot');

  // New conversation: a fresh id and an empty log; a reload keeps the fresh, empty state.
  await page.getByRole('button', { name: 'New conversation' }).click();
  const fresh = await currentThread(page);
  assert.notEqual(fresh, threadId);
  assert.equal(await page.locator('#log > *').count(), 0);
  await send(page, 'hi');
  await answer(page, 'Hello! You said: hi.').waitFor();
  assert.equal(await answer(page, 'Weather report').count(), 0, 'the old thread is gone from view');
  step('new conversation');

  // Stop: a long answer stops mid-way, stays shown as stopped, and so after a reload.
  await page.getByRole('button', { name: 'New conversation' }).click();
  const storyThreadId = await currentThread(page);
  await send(page, 'Tell me a story');
  await answer(page, 'Once upon a time').waitFor();
  await page.getByRole('button', { name: 'Stop' }).click();
  const stopped = page.locator('.msg.assistant.stopped .stopped-note', { hasText: 'Stopped' });
  await stopped.waitFor();
  await page.getByLabel('Message', { exact: true }).fill(''); // the composer is free again
  const partial = await page.locator('.msg.assistant.stopped p.text').textContent();
  assert.ok(!partial.includes('until morning'), 'the answer stopped before its end');
  await page.reload({ waitUntil: 'load' });
  await stopped.waitFor();
  step('stop a running answer; reload shows it stopped');

  // Conversations: the list offers the earlier ones; open one, then delete the story.
  const threads = page.locator('#threads');
  const firstItem = threads.locator(`[data-thread-id="${threadId}"]`);
  await firstItem.getByRole('button', { name: /^Open conversation/ }).click();
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
  assert.equal(await currentThread(page), threadId);
  const storyItem = threads.locator(`[data-thread-id="${storyThreadId}"]`);
  await storyItem.getByRole('button', { name: /^Delete conversation/ }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await storyItem.waitFor({ state: 'detached' });
  assert.equal(await currentThread(page), threadId, 'deleting another conversation keeps this one');
  step('conversation list: open an earlier one, delete another');

  return { threadId, freshThreadId: fresh, storyThreadId, title, reason, partial, ...(await resume(page)) };
}

/** The answers drawn on `page`, one string per assistant text block. */
const answers = (page) => page.locator('.msg.assistant p.text').allTextContents();
const STORY_END = 'until morning.';

/** A 200 answer of GET <mount>api/threads/<thread>/stream (a resume), on `page`. */
function resumedStream(page, thread) {
  const path = `/api/threads/${thread}/stream`;
  return page.waitForResponse((r) => new URL(r.url()).pathname.endsWith(path) && r.status() === 200);
}

/**
 * Resume: a reload mid-answer follows the running answer through the thread's stream
 * in place of the partial one; a second tab on the conversation follows the next
 * answer live; a relayed stream cut mid-answer is resumed from its last sequence.
 */
async function resume(page) {
  // Reload while the story is being told: the page asks for the thread's stream and
  // draws the answer once, to its end.
  await page.getByRole('button', { name: 'New conversation' }).click();
  const resumeThreadId = await currentThread(page);
  await send(page, 'Tell me a story');
  await answer(page, 'Once upon a time').waitFor();
  const reloaded = resumedStream(page, resumeThreadId);
  await page.reload({ waitUntil: 'load' });
  assert.equal(await currentThread(page), resumeThreadId);
  await reloaded; // the old page only polled, and redrew the answer once it had ended
  await answer(page, STORY_END).waitFor();
  const resumed = await answers(page);
  assert.equal(resumed.length, 1, `one answer, drawn once: ${JSON.stringify(resumed)}`);
  assert.ok(resumed[0].startsWith('Once upon a time'));
  assert.equal(await page.locator('.msg').count(), 2, 'one question, one answer');
  step('reload mid-answer resumes the same answer');

  // A second tab on the same conversation (the saved thread id) is idle; the first tab
  // asks for another story, and the second tab shows it live, through the stream.
  const second = await page.context().newPage();
  watchProblems(second);
  await open(second);
  assert.equal(await currentThread(second), resumeThreadId);
  await answer(second, STORY_END).waitFor(); // history redrawn
  const followed = resumedStream(second, resumeThreadId);
  await send(page, 'Tell me another story');
  await followed;
  const bubbles = (tab) => tab.locator('.msg.assistant').filter({ hasText: STORY_END });
  await bubbles(page).nth(1).waitFor();
  await bubbles(second).nth(1).waitFor();
  const tabs = [await answers(page), await answers(second)];
  assert.deepEqual(tabs[1], tabs[0], 'both tabs show the same answers');
  assert.equal(tabs[0].length, 2);
  await second.close();
  step('a second tab follows the running answer live');

  // A relayed answer whose connection drops mid-answer: the POST's body is cut after
  // half its frames (fault injection), and the page resumes with ?after=<last id> (stream id and sequence).
  await page.getByRole('button', { name: 'New conversation' }).click();
  const dropThreadId = await currentThread(page);
  const posted = (url) => url.pathname.endsWith(`/api/threads/${dropThreadId}/messages`);
  let cut = null;
  await page.route(posted, async (route) => {
    const response = await route.fetch(); // the whole segment, once the run has ended
    const frames = (await response.text()).split('\n\n').filter((frame) => frame.includes('data:'));
    const kept = frames.slice(0, Math.floor(frames.length / 2));
    cut = kept.at(-1).match(/^id: ([0-9a-f]{32}:\d+)$/m)[1];
    await route.fulfill({ response, body: kept.map((frame) => `${frame}\n\n`).join('') });
  });
  const resumedAfter = page.waitForRequest((r) => new URL(r.url()).pathname.endsWith(
    `/api/threads/${dropThreadId}/stream`,
  ));
  await send(page, 'Tell me a story');
  const request = await resumedAfter;
  await answer(page, STORY_END).waitFor();
  await page.unroute(posted);
  assert.equal(new URL(request.url()).searchParams.get('after'), cut, 'resumed after the cut');
  const dropped = await answers(page);
  assert.equal(dropped.length, 1, `one answer, drawn once: ${JSON.stringify(dropped)}`);
  step('a dropped connection resumes from the last sequence');

  return { resumeThreadId, resumed: resumed[0], tabs, dropThreadId, dropped: dropped[0] };
}

/**
 * One fresh conversation per delivery: a frontend tool and an approval through it.
 * The page's traffic shows which way the output came: every POST carries
 * ?delivery=<it> and is answered 202 for push (200 for relay), Mercure output arrives
 * on an EventSource to the hub, Pusher output as frames on pusher-js's WebSocket.
 */
async function pushDeliveries(page) {
  const traffic = watchTraffic(page);
  const { title } = await open(page);
  await page.getByText('This server offers Relay (SSE), Pusher, Mercure.').waitFor();
  step('delivery selector');

  const conversations = {};
  for (const delivery of deliveries) {
    await page.getByRole('button', { name: 'New conversation' }).click();
    const threadId = await currentThread(page);
    await page.getByLabel(LABELS[delivery]).check(); // waits until discovery enabled it
    traffic.reset();

    await send(page, 'What is the page title?');
    await answer(page, `The title of this page is "${title}".`).waitFor();
    await toolCard(page, 'read_title').getByText('answered by the page').waitFor();
    step(`${delivery}: frontend tool`);

    await send(page, 'Delete report.pdf');
    const card = page.getByRole('group', { name: 'Approval needed' });
    await card.getByRole('button', { name: 'Approve' }).click();
    await answer(page, SETTLED).waitFor();
    await decided(page, 'approved').filter({ hasText: 'report.pdf deleted' }).waitFor();
    step(`${delivery}: approval`);

    await page.screenshot({ path: screenshotFor(delivery), fullPage: true });
    conversations[delivery] = { threadId, ...traffic.summary(threadId) };
    step(`${delivery}: screenshot`);
  }
  return { title, conversations };
}

/**
 * The page supports servers that predate GET /demo/config (it then offers relay only);
 * Chromium logs that 404 as an error, which is expected of such a server and nothing
 * else. Push runs need the endpoint, so they tolerate nothing.
 */
function olderServerWithoutConfig(message) {
  const { pathname } = new URL(message.location().url || 'about:blank');
  return deliveries.length === 0 && pathname === '/demo/config' && message.text().includes('404');
}

function screenshotFor(delivery) {
  return screenshotPath.replace(/(\.png)?$/, `-${delivery}.png`);
}

/** Record the page's requests to the thread API, to the hub and on WebSockets. */
function watchTraffic(page) {
  let posts = [];
  let hubRequests = 0;
  let socketEvents = 0;
  page.on('response', (response) => {
    const request = response.request();
    const url = new URL(request.url());
    if (request.method() === 'POST' && url.pathname.startsWith('/api/threads/')) {
      posts.push({ path: url.pathname, delivery: url.searchParams.get('delivery'), status: response.status() });
    }
  });
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/.well-known/mercure') hubRequests += 1;
  });
  page.on('websocket', (socket) => {
    socket.on('framereceived', ({ payload }) => {
      // Pusher protocol frames are JSON {event, channel?, data}; its own start "pusher".
      const event = parseJSON(String(payload))?.event;
      if (typeof event === 'string' && !event.startsWith('pusher')) socketEvents += 1;
    });
  });
  return {
    reset() {
      posts = [];
      hubRequests = 0;
      socketEvents = 0;
    },
    summary(threadId) {
      const ours = posts.filter((post) => post.path.startsWith(`/api/threads/${threadId}/`));
      return { posts: ours, hubRequests, socketEvents };
    },
  };
}

/** Page errors and console errors of every tab the run opens. */
const problems = [];

function watchProblems(page) {
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error' || olderServerWithoutConfig(message)) return;
    problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
}

async function run(page) {
  watchProblems(page);
  const result = deliveries.length ? await pushDeliveries(page) : await journey(page);
  assert.deepEqual(problems, []);
  console.log(`RESULT ${JSON.stringify(result)}`);
}

function parseJSON(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function step(name) {
  console.log(`ok - ${name}`);
}

const userDataDir = mkdtempSync(join(tmpdir(), 'relayline-demo-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ARGS,
    timeout: TIMEOUT_MS,
  });
  context.setDefaultTimeout(TIMEOUT_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  try {
    await run(page);
  } catch (error) {
    // Keep what the page showed for the failure report, then fail.
    console.error(`FAILED: ${error.stack || error}`);
    console.error(`--- page text ---\n${await page.locator('body').innerText().catch(() => '?')}`);
    const failureShot = `${screenshotPath}.failure.png`;
    await page.screenshot({ path: failureShot, fullPage: true }).catch(() => {});
    process.exitCode = 1;
  }
} finally {
  await context?.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
