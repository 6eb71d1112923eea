// web/static/relayline-agent.js, the file applications copy or import, loaded as it is
// shipped. It imports '@ag-ui/client' by name, and Node resolves a name from the
// importing file's folder (web/static has no node_modules): a resolve hook sends the
// names that file imports to this suite's node_modules, the pinned @ag-ui/client.
import { register } from 'node:module';

const SHIPPED = new URL('../../../web/static/relayline-agent.js', import.meta.url).href;

// The hooks run on Node's loader thread; they get the two URLs through `data`.
const HOOKS = `
let shipped, suite;
export function initialize(data) { ({ shipped, suite } = data); }
export function resolve(specifier, context, next) {
  const bare = !/^(\\.|\\/|[a-z][a-z0-9+.-]*:)/i.test(specifier);
  if (bare && context.parentURL === shipped) return next(specifier, { ...context, parentURL: suite });
  return next(specifier, context);
}`;

register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
  data: { shipped: SHIPPED, suite: import.meta.url },
});

/** @type {typeof import('../../../web/static/relayline-agent.js').RelaylineAgent} */
export const { RelaylineAgent } = await import(SHIPPED);
