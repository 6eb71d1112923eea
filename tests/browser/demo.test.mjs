/**
 * Drives the demo page at "/" in headless Debian Chromium with playwright-core.
 *
 *   node demo.test.mjs <base url> <screenshot.png>
 *
 * Run by tests/integration/test_demo_page.py against a real stack (web app, Celery
 * worker, Redis, SQLite) serving the demo agent (shared/demo.py). Every wait is a
 * Playwright auto-waiting locator with a bounded timeout: no sleeps. Prints one
 * `RESULT {...}` line (JSON) that the Python side checks against the server's history.
 * Exit code 0 means every step passed.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [baseUrl, screenshotPath] = process.argv.slice(2);
if (!baseUrl || !screenshotPath) {
  console.error('usage: node demo.test.mjs <base url> <screenshot.png>');
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

async function send(page, text) {
  const prompt = page.getByLabel('Message', { exact: true });
  await prompt.fill(text); // waits until the composer is enabled again
  await page.getByRole('button', { name: 'Send' }).click();
}

async function run(page) {
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });

  const loaded = await page.goto(baseUrl, { waitUntil: 'load' });
  assert.equal(loaded.status(), 200);
  const title = await page.title();
  assert.equal(title, 'relayline demo');
  const threadId = (await page.locator('#thread-id').textContent()).trim();
  assert.match(threadId, /^demo-[0-9a-f]{24}$/);

  // Delivery: relay is the one choice; the push variants are shown, disabled, explained.
  assert.equal(await page.getByLabel('Relay (SSE)').isChecked(), true);
  assert.equal(await page.getByLabel('Pusher').isDisabled(), true);
  assert.equal(await page.getByLabel('Mercure').isDisabled(), true);
  await page.getByText('push delivery coming').waitFor();
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
  await answer(page, 'Result: report.pdf deleted').waitFor();
  await card.getByText('Approved', { exact: true }).waitFor();
  step('approve');

  // Reload mid-approval: the conversation and the pending card come back from the server.
  await send(page, 'Delete report.pdf');
  // The new card is the one whose Approve button is still enabled.
  const undecided = page
    .getByRole('group', { name: 'Approval needed' })
    .filter({ has: page.getByRole('button', { name: 'Approve', disabled: false }) });
  await undecided.waitFor();
  await page.reload({ waitUntil: 'load' });
  const keptId = (await page.locator('#thread-id').textContent()).trim();
  assert.equal(keptId, threadId, 'thread id kept');
  await answer(page, 'Weather report: sunny and 21 °C in Lisbon.').waitFor(); // history redrawn
  await answer(page, 'Result: report.pdf deleted').waitFor();
  card = page.getByRole('group', { name: 'Approval needed' });
  await card.waitFor(); // exactly one: a strict locator fails if the old card came back too
  const reason = 'keep it for the audit';
  await card.getByLabel('Reason (optional)').fill(reason);
  await card.getByRole('button', { name: 'Reject' }).click();
  await answer(page, `Reason: ${reason}`).waitFor();
  await page
    .locator('.tool-status[data-status="rejected"]', { hasText: `rejected: ${reason}` })
    .waitFor();
  step('reload mid-approval, reject with a reason');

  await page.screenshot({ path: screenshotPath, fullPage: true });
  step('screenshot');

  // New conversation: a fresh id and an empty log; a reload keeps the fresh, empty state.
  await page.getByRole('button', { name: 'New conversation' }).click();
  const fresh = (await page.locator('#thread-id').textContent()).trim();
  assert.notEqual(fresh, threadId);
  assert.equal(await page.locator('#log > *').count(), 0);
  await send(page, 'hi');
  await answer(page, 'Hello! You said: hi.').waitFor();
  assert.equal(await answer(page, 'Weather report').count(), 0, 'the old thread is gone from view');
  step('new conversation');

  assert.deepEqual(problems, []);
  console.log(`RESULT ${JSON.stringify({ threadId, freshThreadId: fresh, title, reason })}`);
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
