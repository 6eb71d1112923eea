/**
 * The demo page's person-facing features in headless Debian Chromium (playwright-core),
 * on a server with RELAYLINE_AUTH=token:
 *
 *   node demo-features.test.mjs <base url> <artifacts dir> <token> <outcome texts JSON>
 *
 * the token field (every API request then carries the bearer token), the suggestion
 * chips (one tells a long story: Stop is there to press), decided approvals collapsed
 * to one line with the person's words for approved and rejected, an approval stopped
 * by the person shown "stopped" live and the same after a reload, and deleting a
 * conversation only after a confirmation dialog. Screenshots go to <artifacts dir>.
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

const [baseUrl, artifacts, token, outcomesJSON] = process.argv.slice(2);
if (!baseUrl || !artifacts || !token || !outcomesJSON) {
  console.error('usage: node demo-features.test.mjs <base url> <artifacts dir> <token> <outcome texts JSON>');
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

async function run(page) {
  const result = {};
  const apiRequests = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) {
      apiRequests.push({ method: r.method(), path: new URL(r.url()).pathname, auth: r.headers().authorization ?? null });
    }
  });

  // Token: the server wants a bearer token; the page asks for it before anything else.
  const loaded = await page.goto(baseUrl, { waitUntil: 'load' });
  assert.equal(loaded.status(), 200);
  const field = page.getByLabel('Access token');
  await field.waitFor();
  await page.getByText('This server wants an access token').waitFor();
  assert.equal(await page.getByLabel('Message', { exact: true }).isDisabled(), true);
  await shot(page, 'token-field');
  assert.equal(apiRequests.length, 0, 'no API request before there is a token');
  await field.fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  const threadId = await currentThread(page);
  step('token field');

  // Suggestion chips: the agent's suggestions; one click sends one.
  const chips = page.getByRole('group', { name: 'Suggestions' }).getByRole('button');
  await chips.first().waitFor();
  result.chips = await chips.allTextContents();
  await chip(page, 'What is the weather?').click();
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor();
  await shot(page, 'suggestion-chips');
  step('suggestion chips');

  // The long story: Stop shows up while it is told, and stops it.
  await chip(page, 'Tell me a long story').click();
  await answer(page, 'Once upon a time').waitFor();
  await page.getByRole('button', { name: 'Stop' }).click();
  await stoppedNote(page).waitFor();
  const partial = await page.locator('.msg.assistant.stopped p.text').textContent();
  assert.ok(!partial.includes('until morning'), 'stopped before its end');
  step('long story chip and Stop');

  // Approve: the card goes, the call's own card says it in one line.
  await page.getByRole('button', { name: 'New conversation' }).click();
  result.threadId = await currentThread(page);
  await chip(page, 'Delete report.pdf').click();
  await approvalCards(page).getByRole('button', { name: 'Approve' }).click();
  await answer(page, SETTLED).waitFor();
  const approved = decided(page, 'approved').filter({ hasText: 'report.pdf deleted' });
  await approved.waitFor();
  assert.equal(await approvalCards(page).count(), 0, 'a decided approval leaves no card');
  await assertOneLine(approved, 'delete_file', OUTCOMES.approved);
  step('an approved call collapses to one line');

  // Reject with a reason: the person's words and their reason, not the model's.
  const reason = 'keep it for the audit';
  await send(page, 'Delete report.pdf');
  await approvalCards(page).getByLabel('Reason (optional)').fill(reason);
  await approvalCards(page).getByRole('button', { name: 'Reject' }).click();
  await answer(page, SETTLED).nth(1).waitFor();
  const rejected = decided(page, 'rejected');
  await rejected.waitFor();
  assert.equal(await approvalCards(page).count(), 0);
  await assertOneLine(rejected, 'delete_file', `${OUTCOMES.rejectedBecause} ${reason}`);
  result.reason = reason;
  step('a rejected call collapses to one line in the person\'s words');

  // Stop while an approval waits: "stopped" live, and the same after a reload.
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
  assert.equal(await currentThread(page), result.threadId);
  await stopped.waitFor();
  await answer(page, SETTLED).nth(1).waitFor(); // history drawn to its end
  const reloaded = await drawnOutcomes(page);
  assert.deepEqual(reloaded, live, 'the same outcomes after a reload');
  assert.equal(reloaded.cards.length, 3);
  assert.equal(await page.locator('.tool-status[data-status="error"]').count(), 0);
  assert.ok(!MODEL_WORDS.test(await page.locator('#log').innerText()), 'no model-facing text on the page');
  await shot(page, 'decided-and-stopped-after-reload');
  result.outcomes = reloaded;
  step('a stopped approval looks the same live and after a reload');

  // Delete: a dialog asks first; Cancel keeps the conversation, Delete erases it.
  const item = page.locator(`#threads [data-thread-id="${threadId}"]`);
  await item.getByRole('button', { name: /^Delete conversation/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this conversation?' });
  await dialog.waitFor();
  await shot(page, 'delete-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.equal(await item.count(), 1, 'Cancel keeps the conversation');
  assert.equal(apiRequests.filter((r) => r.method === 'DELETE').length, 0, 'nothing was sent');
  await item.getByRole('button', { name: /^Delete conversation/ }).click();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await item.waitFor({ state: 'detached' });
  assert.equal(apiRequests.filter((r) => r.method === 'DELETE').length, 1);
  result.deletedThreadId = threadId;
  step('delete asks for confirmation');

  // Every API request of the page carried the person's token.
  assert.ok(apiRequests.length > 0);
  assert.deepEqual([...new Set(apiRequests.map((r) => r.auth))], [`Bearer ${token}`]);
  result.apiRequests = apiRequests.length;
  return result;
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
    const result = await run(page);
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
