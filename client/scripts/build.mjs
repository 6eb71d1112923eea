// Builds dist/ of @relayline/client (run by `npm run build` and by `npm pack`'s prepack).
// It reports on stderr only, so that `npm pack --json` prints nothing but its JSON.
//
// The source of truth is web/static/: the files the relayline web app serves at
// /static/ (and the demo page imports) are copied here byte for byte, and their type
// declarations are generated from their JSDoc by tsc. Nothing is edited in client/, so
// the package and the served files cannot drift apart.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The modules the package exports, as web/static names them. */
const MODULES = ['relayline-consumer.js', 'relayline-agent.js'];

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const STATIC = here('../../web/static/');
const PACKAGE = here('../');
const DIST = here('../dist/');
const TSC = here('../node_modules/typescript/bin/tsc');

function fail(message) {
  console.error(`build: ${message}`);
  process.exit(1);
}

if (!existsSync(TSC)) fail('TypeScript is not installed: run `npm ci` in client/ first.');

rmSync(DIST, { recursive: true, force: true });
mkdirSync(DIST);
for (const name of MODULES) {
  if (!existsSync(STATIC + name)) fail(`${STATIC}${name} is missing.`);
  copyFileSync(STATIC + name, DIST + name);
}

// tsconfig.json names the copies in dist/, so their imports ('@ag-ui/client') resolve
// from client/node_modules, and the declarations land beside them.
const tsc = spawnSync(process.execPath, [TSC, '--project', 'tsconfig.json', '--pretty', 'false'], {
  cwd: PACKAGE,
  stdio: ['ignore', 2, 2],
});
if (tsc.status !== 0) fail(`tsc exited with ${tsc.status ?? tsc.signal}.`);
for (const name of MODULES) {
  const declarations = DIST + name.replace(/\.js$/, '.d.ts');
  if (!existsSync(declarations)) fail(`tsc wrote no ${declarations}.`);
}
console.error(`build: dist/ holds ${MODULES.join(', ')} from web/static/ and their declarations.`);
