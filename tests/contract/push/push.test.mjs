// Push delivery as real clients see it (issue 6 item 4). For each configured delivery
// (pusher-js on private-thread-<id> or private-encrypted-thread-<id>, authorized by
// /pusher/auth; EventSource on the Mercure hub with the token of /mercure/token), a
// turn is POSTed with `?delivery=` in the AG-UI and in the Vercel protocol after the
// subscription is live. The agent answers with ~30 kB of mixed-script Unicode, so on
// Pusher (10 kB events) each text event crosses as `stream.fragment` envelopes.
// web/static/relayline-consumer.js reassembles the segment, and its protocol stream is
// handed to the official clients exactly as the consumer's header documents:
// - @ag-ui/client: an AbstractAgent whose run() returns the pushed events; runAgent()
//   puts them through the client's own pipeline (verification, then applying them to
//   the agent's messages), each event parsed by @ag-ui/core's EventSchemas first;
// - ai (Vercel AI SDK 7): a ChatTransport whose sendMessages() returns the pushed
//   chunks, validated by uiMessageChunkSchema and read by readUIMessageStream.
// The final assistant message must be the answer, exactly, and so must history.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { AbstractAgent } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { asSchema, readUIMessageStream, uiMessageChunkSchema } from 'ai';
import { Observable } from 'rxjs';

import {
  ANSWER,
  DELIVERIES,
  assertAccepted,
  assertTransported,
  assertRunCompleted,
  getJson,
  listen,
  newThreadId,
  postPushed,
} from './helpers.mjs';

const QUESTION = 'Tell me a long story in every script, please.';

/**
 * An AG-UI agent whose transport is push: run() subscribes, POSTs the run input to
 * /agui with `?delivery=`, and emits the events the consumer reassembles.
 */
class PushedAgent extends AbstractAgent {
  /** @param {{delivery: string, threadId: string, initialMessages: object[]}} config */
  constructor({ delivery, ...config }) {
    super(config);
    this.delivery = delivery;
    this.accepted = undefined; // the 202 body of the last run
    this.listener = undefined; // the listener of the last run, for transport checks
  }

  run(input) {
    return new Observable((observer) => {
      let reader;
      let listener;
      (async () => {
        listener = await listen(this.delivery, input.threadId);
        this.listener = listener;
        reader = listener.protocolStream((event) => EventSchemas.parse(event)).getReader();
        this.accepted = await postPushed('/agui', listener.transport, input);
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          observer.next(value);
        }
        observer.complete();
      })()
        .catch((error) => observer.error(error))
        .finally(() => listener?.close());
      return () => {
        reader?.cancel().catch(() => {});
        listener?.close();
      };
    });
  }
}

/**
 * A Vercel ChatTransport whose transport is push: sendMessages() subscribes, POSTs the
 * messages to /api/chat with `?delivery=`, and returns the reassembled chunk stream.
 */
class PushedChatTransport {
  constructor(delivery) {
    this.delivery = delivery;
    this.accepted = undefined;
    this.listener = undefined;
    this.chunkSchema = asSchema(uiMessageChunkSchema);
  }

  async sendMessages({ chatId, messages, trigger, messageId }) {
    const listener = await listen(this.delivery, chatId);
    this.listener = listener;
    const stream = listener.protocolStream(async (event) => {
      const checked = await this.chunkSchema.validate(event);
      if (!checked.success) throw checked.error;
      return checked.value;
    });
    try {
      this.accepted = await postPushed('/api/chat', listener.transport, { id: chatId, messages, trigger, messageId });
    } catch (error) {
      await stream.cancel().catch(() => {});
      listener.close();
      throw error;
    }
    // Disconnect once the segment has been read to its end (or abandoned).
    return stream.pipeThrough(new TransformStream({ flush: () => listener.close() }));
  }

  async reconnectToStream() {
    return null; // push keeps nothing to resume from
  }
}

for (const delivery of DELIVERIES) {
  describe(`${delivery} delivery`, () => {
    const listeners = [];
    after(() => listeners.forEach((listener) => listener?.close()));

    test('the official AG-UI client receives the long Unicode answer through the consumer', async () => {
      const threadId = newThreadId(`agui-${delivery}`);
      const user = { id: 'u-1', role: 'user', content: QUESTION };
      const agent = new PushedAgent({ delivery, threadId, initialMessages: [user] });
      const seen = [];
      const { newMessages } = await agent.runAgent(
        { runId: 'client-run-1' },
        { onEvent: ({ event }) => void seen.push(event.type) },
      );
      listeners.push(agent.listener);

      assertAccepted(agent.accepted, agent.listener, threadId);
      assertTransported(agent.listener);
      assert.equal(seen[0], 'RUN_STARTED');
      assert.equal(seen.at(-1), 'RUN_FINISHED');
      assert.ok(seen.includes('TEXT_MESSAGE_CONTENT'), JSON.stringify(seen));

      const assistant = newMessages.filter((m) => m.role === 'assistant');
      assert.equal(assistant.length, 1, JSON.stringify(newMessages.map((m) => m.role)));
      assert.equal(assistant[0].content.length, ANSWER.length);
      assert.ok(assistant[0].content === ANSWER, 'the assistant message differs from the answer');
      assert.deepEqual(agent.messages.map((m) => m.role), ['user', 'assistant']);

      await assertRunCompleted(threadId, agent.accepted.runId);
      const history = await getJson(`/agui/threads/${encodeURIComponent(threadId)}`);
      const stored = history.messages.map(({ role, content }) => ({ role, content }));
      assert.deepEqual(stored, [{ role: 'user', content: QUESTION }, { role: 'assistant', content: ANSWER }]);
      assert.equal(history.messages[1].id, assistant[0].id);
    });

    test('the Vercel AI SDK reads the long Unicode answer through the consumer', async () => {
      const threadId = newThreadId(`vercel-${delivery}`);
      const transport = new PushedChatTransport(delivery);
      const user = { id: 'u-1', role: 'user', parts: [{ type: 'text', text: QUESTION }] };
      const stream = await transport.sendMessages({
        chatId: threadId,
        messages: [user],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      listeners.push(transport.listener);

      let message;
      const errors = [];
      for await (const snapshot of readUIMessageStream({ stream, onError: (error) => errors.push(error), terminateOnError: true })) {
        message = snapshot;
      }
      assert.deepEqual(errors, []);
      assertAccepted(transport.accepted, transport.listener, threadId);
      assertTransported(transport.listener);

      assert.ok(message, 'readUIMessageStream produced no message');
      assert.equal(message.role, 'assistant');
      const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
      assert.equal(text.length, ANSWER.length);
      assert.ok(text === ANSWER, 'the assistant message differs from the answer');

      await assertRunCompleted(threadId, transport.accepted.runId);
      const history = await getJson(`/api/chat/${encodeURIComponent(threadId)}`);
      assert.deepEqual(history.messages.map((m) => m.role), ['user', 'assistant']);
      const storedText = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
      assert.equal(storedText(history.messages[0]), QUESTION);
      assert.ok(storedText(history.messages[1]) === ANSWER, 'the stored assistant message differs from the answer');
      assert.equal(history.messages[1].id, message.id);
    });
  });
}
