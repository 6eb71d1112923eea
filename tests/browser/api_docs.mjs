// GET /docs in headless Debian Chromium: the interactive OpenAPI viewer loads every file
// from relayline itself (no CDN) and renders the operations of /openapi.json.
// Usage: node api_docs.mjs <base url> <screenshot.png>; prints one line `RESULT {...}`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, screenshot] = process.argv.slice(2);
const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  // nothing but this machine resolves: a file asked of a CDN would fail the page
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost',
];
const userDataDir = mkdtempSync(join(tmpdir(), 'relayline-docs-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ARGS,
  timeout: 60_000,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  const requests = [];
  const failed = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('requestfailed', (request) => failed.push(request.url()));
  page.on('response', (response) => {
    if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
  });
  await page.goto(`${base}/docs`, { waitUntil: 'networkidle', timeout: 60_000 });
  await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
  const paths = await page.$$eval('.opblock-summary-path', (nodes) => nodes.map((n) => n.getAttribute('data-path')));
  const title = await page.$eval('.info .title', (node) => node.textContent);
  await page.screenshot({ path: screenshot, fullPage: false });
  console.log(`RESULT ${JSON.stringify({ url: page.url(), requests, failed, paths, title })}`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
