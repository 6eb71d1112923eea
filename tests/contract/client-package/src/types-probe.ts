// Compiled, never run: the declarations of @relayline/client describe its API (right
// uses type-check) and are not `any` (each wrong use below must be an error, or tsc
// reports the unused @ts-expect-error).
import { HttpAgent } from '@ag-ui/client';
import {
  createChannelConsumer,
  createProtocolStream,
  encodeSSE,
  envelopesRecovery,
  subscribeToPusher,
  toSSEStream,
  type ChannelEvent,
  type ConsumerOptions,
  type PusherChannelLike,
  type Recovery,
  type Subscription,
} from '@relayline/client';
import { RelaylineAgent, type RelaylineAgentConfig } from '@relayline/client/agent';

export const consumer = createChannelConsumer({
  onEvent(event: ChannelEvent) {
    const sequence: number = event.sequence;
    void sequence;
  },
  onGap(reason: string) {
    void reason;
  },
});
// @ts-expect-error: a consumer needs onGap as well as onEvent
createChannelConsumer({ onEvent() {} });

export const recovery: Recovery = envelopesRecovery('/api/threads/t1', { credentials: 'include' });
export const options: ConsumerOptions = { gapTimeoutMs: 10_000, recovery };
// @ts-expect-error: gapTimeoutMs is a number of milliseconds
export const badOptions: ConsumerOptions = { gapTimeoutMs: '10s' };

declare const channel: PusherChannelLike;
export const subscription: Subscription = subscribeToPusher(channel, { onEvent() {}, onGap() {} }, undefined, options);

// parse's result types the stream
export const types: ReadableStream<string> = createProtocolStream(() => subscription, (event) => event.type);
// @ts-expect-error: a stream of strings is not a stream of numbers
export const numbers: ReadableStream<number> = createProtocolStream(() => subscription, (event) => event.type);
export const bytes: ReadableStream<Uint8Array> = toSSEStream(createProtocolStream(() => subscription));
export const frame: string = encodeSSE({ type: 'text' });
// @ts-expect-error: an SSE frame encodes an event with a type
encodeSSE({ delta: 'no type' });

export const agent: HttpAgent = new RelaylineAgent({ url: '/agui', threadId: 't1', stopGraceMs: 1000 });
export const config: RelaylineAgentConfig = { url: '/agui', stopUrl: (self) => `${self.url}/stop` };
// @ts-expect-error: stopGraceMs is a number of milliseconds
new RelaylineAgent({ url: '/agui', stopGraceMs: 'soon' });
export const stop: string = new RelaylineAgent(config).stopEndpoint();

// @ts-expect-error: only the exported entry points resolve, not files under dist/
export { createChannelConsumer as hidden } from '@relayline/client/dist/relayline-consumer.js';
