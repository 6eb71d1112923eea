// What both pages are told in their URL: `api`, relayline's base URL on another origin
// than the page's; `token`, a bearer token (RELAYLINE_AUTH=token); `thread`, the thread;
// `credentials`, the fetch credentials mode (`include` sends a cookie-signed-in host's
// cookie across origins; default `same-origin`, which does not).
const params = new URLSearchParams(window.location.search);

export const API = params.get('api');
export const THREAD = params.get('thread');
export const CREDENTIALS = params.get('credentials') ?? 'same-origin';
export const RESUME = params.get('resume') === '1';
/** Headers of every call: a bearer token makes each a preflighted CORS request. */
export const AUTH = params.get('token') ? { Authorization: `Bearer ${params.get('token')}` } : {};

if (!API || !THREAD) throw new Error('the page needs ?api=<relayline base URL>&thread=<id>');
