/**
 * The demo page's person-facing features in headless Debian Chromium (playwright-core):
 *
 *   node demo-features.test.mjs <base url> <artifacts dir> <outcome texts JSON>
 *   node demo-features.test.mjs <base url> <artifacts dir> <outcome texts JSON> <token>
 *
 * Without a token (a server without auth): the suggestion chips (one tells a long
 * story: Stop is there to press), decided approvals collapsed to one line in the
 * person's words (shared/texts.py OUTCOME_TEXTS, passed in as the server sends them),
 * an approval the person stopped shown "stopped" live and the same after a reload, and
 * deleting a conversation only after a confirmation dialog; each feature runs from a
 * fresh conversation and is reported on its own (`ok - ` / `not ok - `). With a token
 * (a server with RELAYLINE_AUTH=token): the token field, before any API request, and
 * the bearer token on every request after it. Screenshots go to <artifacts dir>.
 *
 * Run by tests/integration/test_demo_page.py. Every wait is a Playwright auto-waiting
 * locator or event with a bounded timeout: no sleeps. Prints one `RESULT {...}` line
 * (JSON) for the Python side; exit code 0 means every step passed.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [baseUrl, artifacts, outcomesJSON, token] = process.argv.slice(2);
if (!baseUrl || !artifacts || !outcomesJSON) {
  console.error('usage: node demo-features.test.mjs <base url> <artifacts dir> <outcome texts JSON> [<token>]');
  process.exit(2);
}
/** shared/texts.py OUTCOME_TEXTS, as the server sends them in GET /demo/config */
const OUTCOMES = JSON.parse(outcomesJSON);

const TIMEOUT_MS = 20_000;
// As in demo.test.mjs: headless, no sandbox (root), no network beyond this machine.
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

/** The demo agent's answer once an approval is settled (relayline/demo_script.json). */
const SETTLED = 'That is settled: the call above says what happened to report.pdf.';
/** The model-facing words for rejected and stopped calls: never shown to the person. */
const MODEL_WORDS = /TOOL NOT (EXECUTED|COMPLETED)|Do not retry/;

const answer = (page, text) => page.locator('.msg.assistant p.text', { hasText: text });
const approvalCards = (page) => page.getByRole('group', { name: 'Approval needed' });
const chip = (page, name) =>
  page.getByRole('group', { name: 'Suggestions' }).getByRole('button', { name, exact: true });
/** The collapsed card of a call with `outcome` (approved, rejected, stopped, ...). */
const decided = (page, outcome) =>
  page.locator('.tool.decided', { has: page.locator(`.tool-decision[data-outcome="${outcome}"]`) });
const stoppedNote = (page) => page.locator('.msg.assistant.stopped .stopped-note', { hasText: 'Stopped' });

async function currentThread(page) {
  await page.waitForFunction(() => document.querySelector('#thread-id')?.textContent.trim());
  return (await page.locator('#thread-id').textContent()).trim();
}

async function send(page, text) {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

function shot(page, name) {
  return page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

/** One collapsed card: one line, the tool's name once, the outcome in the person's words. */
async function assertOneLine(card, name, words) {
  const text = await card.innerText();
  assert.ok(!text.includes('\n'), `one line: ${JSON.stringify(text)}`);
  assert.equal(text.split(name).length - 1, 1, `the name once: ${JSON.stringify(text)}`);
  assert.ok(text.includes(words), `${JSON.stringify(words)} in ${JSON.stringify(text)}`);
  assert.ok(!MODEL_WORDS.test(text), `no model-facing text: ${JSON.stringify(text)}`);
  return text;
}

/** What the page draws of the decided calls and stopped answers, to compare after a reload. */
async function drawnOutcomes(page) {
  return {
    cards: await page.locator('.tool.decided').allInnerTexts(),
    stopped: await page.locator('.msg.assistant.stopped').count(),
  };
}

/** Record the page's requests to relayline's API: method, path, Authorization. */
function watchApi(page) {
  const seen = [];
  page.on('request', (r) => {
    const { pathname } = new URL(r.url());
    if (pathname.startsWith('/api/')) {
      seen.push({ method: r.method(), path: pathname, auth: r.headers().authorization ?? null });
    }
  });
  return seen;
}

/** A fresh, empty conversation; returns its thread id. */
async function freshConversation(page) {
  await page.getByRole('button', { name: 'New conversation' }).click();
  return currentThread(page);
}

/**
 * The features on a server without auth. Each step starts from a fresh conversation and
 * is reported on its own (`ok - ` or `not ok - `), so a run against a page without one
 * of them shows which are missing.
 */
const FEATURES = {
  async 'suggestion chips'(page, result) {
    const chips = page.getByRole('group', { name: 'Suggestions' }).getByRole('button');
    await chips.first().waitFor();
    result.chips = await chips.allTextContents();
    await freshConversation(page);
    await chip(page, 'What is the weather?').click();
    await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
    await shot(page, 'suggestion-chips');
  },

  async 'long story chip and Stop'(page) {
    await freshConversation(page);
    await chip(page, 'Tell me a long story').click();
    await answer(page, 'Once upon a time').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await stoppedNote(page).waitFor();
    const partial = await page.locator('.msg.assistant.stopped p.text').textContent();
    assert.ok(!partial.includes('until morning'), 'stopped before its end');
  },

  async 'an approved call collapses to one line'(page, result) {
    result.approvedThreadId = await freshConversation(page);
    await send(page, 'Delete report.pdf');
    await approvalCards(page).getByRole('button', { name: 'Approve' }).click();
    await answer(page, SETTLED).waitFor();
    const approved = decided(page, 'approved').filter({ hasText: 'report.pdf deleted' });
    await approved.waitFor();
    assert.equal(await approvalCards(page).count(), 0, 'a decided approval leaves no card');
    await assertOneLine(approved, 'delete_file', OUTCOMES.approved);
  },

  async "a rejected call collapses to one line in the person's words"(page, result) {
    result.rejectedThreadId = await freshConversation(page);
    result.reason = 'keep it for the audit';
    await send(page, 'Delete report.pdf');
    await approvalCards(page).getByLabel('Reason (optional)').fill(result.reason);
    await approvalCards(page).getByRole('button', { name: 'Reject' }).click();
    await answer(page, SETTLED).waitFor();
    const rejected = decided(page, 'rejected');
    await rejected.waitFor();
    assert.equal(await approvalCards(page).count(), 0, 'a decided approval leaves no card');
    await assertOneLine(rejected, 'delete_file', `${OUTCOMES.rejectedBecause} ${result.reason}`);
  },

  async 'a stopped approval looks the same live and after a reload'(page, result) {
    result.stoppedThreadId = await freshConversation(page);
    await send(page, 'Delete report.pdf');
    await approvalCards(page).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    const stopped = decided(page, 'stopped');
    await stopped.waitFor();
    await stoppedNote(page).waitFor();
    assert.equal(await approvalCards(page).count(), 0);
    await assertOneLine(stopped, 'delete_file', OUTCOMES.stopped);
    const live = await drawnOutcomes(page);
    await page.reload({ waitUntil: 'load' });
    assert.equal(await currentThread(page), result.stoppedThreadId);
    await answer(page, 'I will delete it once you approve.').waitFor(); // history drawn
    const reloaded = await drawnOutcomes(page);
    assert.deepEqual(reloaded, live, 'the same outcomes after a reload');
    assert.deepEqual(reloaded, { cards: [live.cards[0]], stopped: 1 });
    assert.equal(await page.locator('.tool-status[data-status="error"]').count(), 0);
    assert.ok(!MODEL_WORDS.test(await page.locator('#log').innerText()), 'no model-facing text');
    await shot(page, 'stopped-approval-after-reload');
  },

  async 'delete asks for confirmation'(page, result) {
    const threadId = await freshConversation(page);
    await send(page, 'hi');
    await answer(page, 'Hello! You said: hi.').waitFor();
    await freshConversation(page);
    const deletes = () => result.api.filter((r) => r.method === 'DELETE').length;
    const before = deletes();
    const item = page.locator(`#threads [data-thread-id="${threadId}"]`);
    await item.getByRole('button', { name: /^Delete conversation/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this conversation?' });
    await dialog.waitFor();
    await shot(page, 'delete-dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await item.count(), 1, 'Cancel keeps the conversation');
    assert.equal(deletes(), before, 'nothing was sent');
    await item.getByRole('button', { name: /^Delete conversation/ }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await item.waitFor({ state: 'detached' });
    assert.equal(deletes(), before + 1);
    result.deletedThreadId = threadId;
  },
};

/** Every feature, each on its own; a failed one is reported and the next goes on. */
async function features(page) {
  const result = { api: watchApi(page) };
  await page.goto(baseUrl, { waitUntil: 'load' });
  await currentThread(page);
  let failed = 0;
  for (const [name, feature] of Object.entries(FEATURES)) {
    try {
      await feature(page, result);
      step(name);
    } catch (error) {
      failed += 1;
      console.log(`not ok - ${name}: ${String(error.message || error).split('\n')[0]}`);
      await page.screenshot({ path: join(artifacts, `failed-${failed}.png`), fullPage: true }).catch(() => {});
      await page.goto(baseUrl, { waitUntil: 'load' }); // a clean page for the next one
      await currentThread(page).catch(() => {});
    }
  }
  result.api = result.api.length;
  if (failed) throw new Error(`${failed} of ${Object.keys(FEATURES).length} features failed`);
  return result;
}

/**
 * On a server that wants a bearer token: the page asks for one before any request to
 * the API, then sends it with every request, and a reload keeps it (this tab).
 */
async function tokenField(page) {
  const api = watchApi(page);
  const loaded = await page.goto(baseUrl, { waitUntil: 'load' });
  assert.equal(loaded.status(), 200);
  const field = page.getByLabel('Access token');
  await field.waitFor();
  await page.getByText('This server wants an access token').waitFor();
  assert.equal(await page.getByLabel('Message', { exact: true }).isDisabled(), true);
  await shot(page, 'token-field');
  assert.equal(api.length, 0, 'no API request before there is a token');
  await field.fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  const threadId = await currentThread(page);
  await chip(page, 'What is the weather?').click();
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
  await page.reload({ waitUntil: 'load' });
  assert.equal(await currentThread(page), threadId, 'the tab keeps its token');
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
  assert.ok(api.length > 0);
  assert.deepEqual([...new Set(api.map((r) => r.auth))], [`Bearer ${token}`]);
  step('token field');
  return { threadId, apiRequests: api.length };
}

function step(name) {
  console.log(`ok - ${name}`);
}

const problems = [];
const userDataDir = mkdtempSync(join(tmpdir(), 'relayline-demo-features-'));
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
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  try {
    const result = token ? await tokenField(page) : await features(page);
    assert.deepEqual(problems, []);
    console.log(`RESULT ${JSON.stringify(result)}`);
  } catch (error) {
    console.error(`FAILED: ${error.stack || error}`);
    console.error(`--- page text ---\n${await page.locator('body').innerText().catch(() => '?')}`);
    await page.screenshot({ path: join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
    process.exitCode = 1;
  }
} finally {
  await context?.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
