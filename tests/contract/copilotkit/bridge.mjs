// The CopilotKit runtime bridge: what a CopilotKit application deploys next to its
// frontend (the Next.js route or Node server behind `runtimeUrl`). A CopilotKit v2
// runtime built with createCopilotRuntimeHandler, in its default SSE mode (the
// InMemoryAgentRunner keeps each thread's events in this process's memory), whose
// only agent, "default", is an AG-UI HttpAgent pointed at relayline's POST /agui: a
// RelaylineAgent (web/static/relayline-agent.js), so that the runtime's stop route,
// which only calls the run's `agent.abortRun()`, stops the run on relayline.
//
// With --connect relayline the runtime's runner is a RelaylineAgentRunner instead: runs
// go through the InMemoryAgentRunner as before, but the runtime's connect route (what a
// CopilotKit page calls on load) asks relayline's POST /agui/connect through
// RelaylineAgent.connect(), so a page reloaded mid-run rejoins the live answer even when
// this runtime process never saw the thread (restarted, or another replica).
//
// Run as a program it serves the runtime on 127.0.0.1 and prints one JSON line,
// {"url": <runtimeUrl>, "pid": <pid>}, once it listens:
//
//   node bridge.mjs --agui http://127.0.0.1:8000/agui [--wire-log forwarded.jsonl]
//                   [--connect memory|relayline]
//
// It stops on SIGTERM or SIGINT, or when its standard input closes (the process that
// started it went away). With --wire-log, every request the HttpAgent forwards to
// relayline is appended as one JSON line, {"url", "status", "body": RunAgentInput},
// so tests can check what reached POST /agui.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { argv, exit, pid, stdin, stdout } from 'node:process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CopilotRuntime,
  InMemoryAgentRunner,
  createCopilotRuntimeHandler,
} from '@copilotkit/runtime/v2';
import { createCopilotNodeHandler } from '@copilotkit/runtime/v2/node';
import { RelaylineAgent } from './relayline-agent.mjs';

/** Where the runtime is mounted, as in an application's `/api/copilotkit` route. */
export const BASE_PATH = '/api/copilotkit';

/** The runtime's name for relayline's agent (what the page's agent proxies to). */
export const AGENT_ID = 'default';

/** A fetch that appends each forwarded request and its HTTP status to `wireLog`. */
function recordingFetch(wireLog) {
  return async (url, init) => {
    const response = await fetch(url, init);
    const line = { url: String(url), status: response.status, body: JSON.parse(init.body) };
    appendFileSync(wireLog, `${JSON.stringify(line)}\n`);
    return response;
  };
}

/**
 * A CopilotKit v2 AgentRunner whose connect() rejoins the thread on relayline. The
 * runtime's connect route hands its runner only `{threadId, agentId, headers}` (the
 * forwardable request headers merged over the agent's), never the agent, so the runner
 * is given the runtime's agents: per connect it clones the agent (as the runtime does per
 * request), points the copy at the thread and returns RelaylineAgent.connect()'s events,
 * which the runtime streams to the page as they come. run/stop/isRunning stay the
 * InMemoryAgentRunner's (a run this process started is stopped through its agent).
 */
export class RelaylineAgentRunner extends InMemoryAgentRunner {
  constructor({ agents, ...options }) {
    super(options);
    this.agents = agents;
  }

  connect({ threadId, agentId = AGENT_ID, headers }) {
    const template = this.agents[agentId];
    // An agent without relayline's connect (a plain HttpAgent): what this process saw.
    if (typeof template?.connectEndpoint !== 'function') return super.connect({ threadId, agentId, headers });
    const agent = template.clone();
    agent.threadId = threadId;
    agent.messages = [];
    if (headers) agent.headers = { ...headers };
    return agent.connect(agent.prepareRunAgentInput({}));
  }
}

/**
 * Build the runtime and serve it on 127.0.0.1 (`port` 0 picks a free one). Resolves
 * to `{url, close}`; `url` is the runtimeUrl a CopilotKit page is given.
 */
export async function serveBridge({ aguiUrl, wireLog, connect = 'memory', port = 0 }) {
  const agent = new RelaylineAgent({
    url: aguiUrl,
    ...(wireLog ? { fetch: recordingFetch(wireLog) } : {}),
  });
  const agents = { [AGENT_ID]: agent };
  if (connect !== 'memory' && connect !== 'relayline') throw new Error(`--connect ${connect}?`);
  const runner = connect === 'relayline' ? new RelaylineAgentRunner({ agents }) : undefined;
  const runtime = new CopilotRuntime({ agents, ...(runner ? { runner } : {}) });
  const handler = createCopilotRuntimeHandler({ runtime, basePath: BASE_PATH });
  const server = createServer(createCopilotNodeHandler(handler));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}${BASE_PATH}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      agui: { type: 'string' },
      'wire-log': { type: 'string' },
      connect: { type: 'string', default: 'memory' },
    },
  });
  if (!values.agui) {
    console.error('usage: node bridge.mjs --agui <relayline POST /agui url> [--wire-log <file>]');
    exit(2);
  }
  const bridge = await serveBridge({
    aguiUrl: values.agui,
    wireLog: values['wire-log'],
    connect: values.connect,
  });
  const stop = async () => {
    await bridge.close();
    exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  stdin.once('end', stop);
  stdin.resume();
  stdout.write(`${JSON.stringify({ url: bridge.url, pid })}\n`);
}

if (argv[1] === fileURLToPath(import.meta.url)) {
  await main();
}
