// One turn through the official HttpAgent, reported line by line on stdout for
// tests/contract/test_agui_queued.py, which starts the worker only once this client has
// seen the turn's `relayline.status` "queued" event (web/waiting.py): `event <json>` per
// event the client applied (after its own verification), then `result <json>`.
//
// Usage: node queued-turn.mjs <base url> <thread id> <text>
import { HttpAgent } from '@ag-ui/client';

const [baseUrl, threadId, text] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId });
agent.addMessage({ id: `${threadId}-u1`, role: 'user', content: text });
const say = (kind, value) => process.stdout.write(`${kind} ${JSON.stringify(value)}\n`);
let outcome = null;
let runError = null;
try {
  await agent.runAgent(
    { runId: `${threadId}-run` },
    {
      onEvent: ({ event }) => say('event', event),
      onRunFinishedEvent: ({ outcome: finished }) => {
        outcome = finished;
      },
      onRunErrorEvent: ({ event }) => {
        runError = event;
      },
    },
  );
  say('result', { outcome, runError, messages: agent.messages });
} catch (error) {
  say('result', { outcome, runError, error: String(error?.message ?? error) });
}
