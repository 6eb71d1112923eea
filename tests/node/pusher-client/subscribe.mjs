// A pusher-js 8 subscriber for the Pusher channel integration tests.
//
// Usage: node subscribe.mjs '{"key","host","port","channel","authEndpoint"}'
// Prints one JSON object per line on stdout:
//   {"kind":"ready"}                          the subscription succeeded
//   {"kind":"event","event":name,"data":d}    an event (decrypted on private-encrypted-*)
//   {"kind":"log","message":m}                a pusher-js message about decryption
//   {"kind":"error","error":e}                a subscription or connection error
// and exits when stdin closes, so the test process decides its lifetime.
import Pusher from 'pusher-js';

const options = JSON.parse(process.argv[2]);
const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');

// Decryption failures are only logged by pusher-js: forward them so a test can wait
// for them instead of sleeping.
Pusher.log = (message) => {
  if (/decrypt/i.test(String(message))) emit({ kind: 'log', message: String(message) });
};

const pusher = new Pusher(options.key, {
  wsHost: options.host,
  wsPort: options.port,
  forceTLS: false,
  enabledTransports: ['ws'],
  disableStats: true,
  cluster: 'mt1',
  channelAuthorization: { endpoint: options.authEndpoint, transport: 'ajax' },
});

pusher.connection.bind('error', (error) => emit({ kind: 'error', error: String(error?.error?.data?.message ?? error?.type ?? error) }));
const channel = pusher.subscribe(options.channel);
channel.bind('pusher:subscription_succeeded', () => emit({ kind: 'ready' }));
channel.bind('pusher:subscription_error', (error) => emit({ kind: 'error', error: JSON.stringify(error) }));
channel.bind_global((event, data) => {
  if (!event.startsWith('pusher:')) emit({ kind: 'event', event, data });
});

process.stdin.resume();
process.stdin.on('end', () => {
  pusher.disconnect();
  process.exit(0);
});
