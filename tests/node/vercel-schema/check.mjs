// Checks relayline's Vercel output with the real `ai` package (pinned in package.json).
//
//   node check.mjs [--message=<UIMessage JSON>] < stream    SSE text or JSON lines
//   node check.mjs --messages < messages.json                a UIMessage[] (GET /api/chat/<id>)
//
// Stream mode validates every chunk with the package's uiMessageChunkSchema and with a
// strict copy of it (ai 7 declares the chunk objects loose; relayline promises that no
// field the schema does not know is ever sent), then assembles the chunks with
// readUIMessageStream, starting from --message on a continuation. Any error other than
// the stream's own `error` chunks fails. It prints {"chunks", "message", "errors"}.
// Messages mode runs validateUIMessages and refuses any field the validator drops.
// Exit status 1 with the reason on stderr when anything is off.
import { isDeepStrictEqual } from 'node:util';
import { readUIMessageStream, uiMessageChunkSchema, validateUIMessages } from 'ai';
import * as z from 'zod/v4';

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function readStdin() {
  const pieces = [];
  for await (const piece of process.stdin) pieces.push(piece);
  return Buffer.concat(pieces).toString('utf8');
}

// The package keeps its zod union in a closure; the union's own failure issue hands it
// over through zod's global error hook, and a strict copy is built from its shapes.
async function strictChunkSchema(schema) {
  let union = null;
  z.config({
    customError: issue => {
      if (issue.code === 'invalid_union' && union === null) union = issue.inst;
      return undefined;
    },
  });
  await schema.validate({ type: 0 });
  z.config({ customError: undefined });
  const options = union?._zod?.def?.options;
  if (!Array.isArray(options)) fail('could not read the chunk union of the ai package');
  return z.union(options.map(option => z.strictObject(option._zod.def.shape)));
}

function parseChunks(text) {
  const chunks = [];
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line === '' || line.startsWith(':')) continue; // frame separator, SSE comment
    const body = line.startsWith('data:') ? line.slice(5).trimStart() : line;
    if (body === '[DONE]') continue;
    try {
      chunks.push(JSON.parse(body));
    } catch (error) {
      fail(`line is not JSON: ${line}`);
    }
  }
  return chunks;
}

async function checkStream(text, message) {
  const schema = uiMessageChunkSchema();
  const strict = await strictChunkSchema(schema);
  const chunks = parseChunks(text);
  for (const [index, chunk] of chunks.entries()) {
    const loose = await schema.validate(chunk);
    if (!loose.success) fail(`chunk ${index} ${JSON.stringify(chunk)}: ${loose.error}`);
    const exact = strict.safeParse(chunk);
    if (!exact.success) {
      fail(`chunk ${index} ${JSON.stringify(chunk)} has a field the schema does not know`);
    }
  }
  const expected = chunks.filter(c => c.type === 'error').map(c => c.errorText);
  const errors = [];
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last = message;
  for await (const snapshot of readUIMessageStream({
    message,
    stream,
    onError: error => errors.push(error),
  })) {
    last = snapshot;
  }
  for (const error of errors) {
    const at = expected.indexOf(error?.message);
    if (at < 0) fail(`the stream does not assemble: ${error?.stack ?? error}`);
    expected.splice(at, 1);
  }
  return { chunks: chunks.length, message: last ?? null, errors: errors.map(e => e.message) };
}

async function checkMessages(text) {
  let messages;
  try {
    messages = JSON.parse(text);
  } catch (error) {
    fail(`messages are not JSON: ${error}`);
  }
  let validated;
  try {
    validated = await validateUIMessages({ messages });
  } catch (error) {
    fail(`invalid UIMessage[]: ${error?.message ?? error}`);
  }
  // The validator strips what it does not know: anything stripped was an unknown field.
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(validated)), messages)) {
    fail(`UIMessage[] carries fields the ai package does not know:\n${JSON.stringify(validated)}`);
  }
  return { messages: messages.length };
}

const args = process.argv.slice(2);
const input = await readStdin();
if (args.includes('--messages')) {
  process.stdout.write(`${JSON.stringify(await checkMessages(input))}\n`);
} else {
  const seed = args.find(arg => arg.startsWith('--message='));
  const message = seed ? JSON.parse(seed.slice('--message='.length)) : undefined;
  process.stdout.write(`${JSON.stringify(await checkStream(input, message))}\n`);
}
