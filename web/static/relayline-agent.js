// RelaylineAgent: an AG-UI HttpAgent whose abortRun() stops the run on relayline.
//
// @ag-ui/client's HttpAgent.abortRun() only aborts its fetch; relayline treats a dropped
// connection as a disconnect (the run goes on in the worker, so a reload can resume it),
// and the client reports its own abort as a RUN_ERROR (`code: "abort"`). This class
// instead POSTs relayline's stop route for the agent's thread, as CopilotKit's own client
// does with its runtime:
//
//   POST <url>/stop/<threadId>   (url `…/agui` -> `/agui/stop/<id>`,
//                                 url `…/agent/<agentId>` -> `/agent/<agentId>/stop/<id>`)
//
// and keeps reading: relayline stops the worker and ends the stream as AG-UI clients
// expect of a user stop (the open message closed, RUN_FINISHED, no RUN_ERROR), with the
// partial answer exactly as it keeps it (marked stopped). The fetch is aborted, as
// HttpAgent does, only when the stop request fails or the stream has not ended
// `stopGraceMs` (default 5000) after it.
//
// Use it wherever an HttpAgent points at relayline:
//   - with @ag-ui/client directly: `new RelaylineAgent({ url: '/agui', threadId })`, then
//     `agent.abortRun()` is a real stop;
//   - as the agent of a CopilotKit runtime (`new CopilotRuntime({ agents: { default:
//     new RelaylineAgent({ url }) } })`): the runtime's stop route calls abortRun() on the
//     run's agent, so CopilotKit's Stop stops the worker too.
//
// It also implements connect(), which HttpAgent leaves unimplemented, so that
// `agent.connectAgent()` (what a reloaded page calls) rejoins the thread on relayline:
//
//   POST <url>/connect           (url `…/agui` -> `/agui/connect`,
//                                 url `…/agent/<agentId>` -> `/agent/<agentId>/connect`)
//
// with the HttpAgent's own request (headers, RunAgentInput naming the thread), its SSE
// answer parsed into AG-UI events exactly as HttpAgent.run parses a run: one run that
// carries the stored history as a MESSAGES_SNAPSHOT (and the open interrupt, if the run
// waits on one), then the running answer replayed from its start and followed live to
// its end; nothing when the thread is unknown. A CopilotKit runtime can serve its own
// connect route from it (an AgentRunner whose connect() calls the agent's connect(); see
// docs/clients.md), so a reloaded CopilotKit page rejoins a run whatever runtime process
// started it.
//
// Copy this file into your app, import it, or install it as '@relayline/client/agent'
// (the npm package of client/ in the repository); it needs only '@ag-ui/client' (tested with
// 0.0.59, CopilotKit 1.75's pin; 1.0's HttpAgent has the same abortRun, clone,
// requestInit and exports). `stopUrl` overrides where the stop goes, `connectUrl` where
// the connect goes (each a string, or a function of the agent).
import * as agui from '@ag-ui/client';

const { HttpAgent, runHttpRequest, transformHttpEventStream } = agui;
/** 1.0 checks an outgoing RunAgentInput in HttpAgent.run (0.0.59 has no such step). */
// @ts-ignore: not exported by every pinned version
const enforceOutgoingInput = agui.enforceOutgoingInput ?? ((input) => input);

/** ms the stream may take to end after a stop before the fetch is aborted */
const STOP_GRACE_MS = 5000;

/**
 * @typedef {ConstructorParameters<typeof HttpAgent>[0] & {
 *   stopUrl?: string | ((agent: RelaylineAgent) => string),
 *   stopGraceMs?: number,
 *   connectUrl?: string | ((agent: RelaylineAgent) => string),
 * }} RelaylineAgentConfig
 */

/**
 * `<agent url>/<suffix>` without the url's query or fragment. (A function, not a
 * private method: HttpAgent.clone() builds copies with Object.create, which would not
 * carry a private method.)
 * @param {RelaylineAgent} agent
 * @param {string} suffix
 */
function route(agent, suffix) {
  const base = typeof location === 'undefined' ? undefined : location.href;
  const url = new URL(agent.url, base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${suffix}`;
  url.search = '';
  url.hash = '';
  return url.href;
}

export class RelaylineAgent extends HttpAgent {
  /** @param {RelaylineAgentConfig} config */
  constructor({ stopUrl, stopGraceMs = STOP_GRACE_MS, connectUrl, ...config }) {
    super(config);
    /** @type {string | ((agent: RelaylineAgent) => string) | undefined} */
    this.stopUrl = stopUrl;
    this.stopGraceMs = stopGraceMs;
    /** @type {string | ((agent: RelaylineAgent) => string) | undefined} */
    this.connectUrl = connectUrl;
  }

  /** relayline's stop route for this agent's thread. */
  stopEndpoint() {
    if (typeof this.stopUrl === 'function') return this.stopUrl(this);
    if (typeof this.stopUrl === 'string') return this.stopUrl;
    return route(this, `stop/${encodeURIComponent(this.threadId)}`);
  }

  /** relayline's connect route for this agent (the thread goes in the body). */
  connectEndpoint() {
    if (typeof this.connectUrl === 'function') return this.connectUrl(this);
    if (typeof this.connectUrl === 'string') return this.connectUrl;
    return route(this, 'connect');
  }

  /**
   * Rejoin the thread on relayline: what `connectAgent()` runs. The stored history
   * (a snapshot run), then the running answer, if any, live to its end.
   * @param {import('@ag-ui/client').RunAgentInput} input
   */
  connect(input) {
    // HttpAgent.runAgent gives each run a fresh controller; connectAgent does not, so a
    // connect after an aborted run would start aborted.
    if (this.abortController.signal.aborted) this.abortController = new AbortController();
    const init = this.requestInit(enforceOutgoingInput(input));
    return transformHttpEventStream(
      runHttpRequest(() => this.fetch(this.connectEndpoint(), init)),
      this.debugLogger,
    );
  }

  /** Stop the run on relayline; abort the fetch only if that does not end the stream. */
  abortRun() {
    const controller = this.abortController;
    // Aborts this run's fetch unless it already ended or a newer run replaced it.
    const abort = () => {
      if (this.abortController === controller && !controller.signal.aborted) super.abortRun();
    };
    if (!this.threadId) {
      abort();
      return;
    }
    const timer = setTimeout(() => {
      if (this.isRunning) abort();
    }, this.stopGraceMs);
    // @ts-ignore: Node's timers have unref(), browsers' numbers do not
    timer.unref?.(); // a pending fallback never keeps a Node process alive
    fetch(this.stopEndpoint(), {
      method: 'POST',
      headers: { ...this.headers, 'Content-Type': 'application/json' },
    }).then(
      (response) => {
        if (!response.ok) {
          console.error(`RelaylineAgent: the stop request answered ${response.status}`);
          abort();
        }
      },
      (error) => {
        console.error('RelaylineAgent: the stop request failed', error);
        abort();
      },
    );
  }

  // HttpAgent.clone() (what a CopilotKit runtime runs per request) copies only the
  // fields it knows; the subclass survives through the prototype, its options do not.
  /** @returns {RelaylineAgent} */
  clone() {
    const copy = /** @type {RelaylineAgent} */ (super.clone());
    copy.stopUrl = this.stopUrl;
    copy.stopGraceMs = this.stopGraceMs;
    copy.connectUrl = this.connectUrl;
    return copy;
  }
}
