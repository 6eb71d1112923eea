// A browser page's use of the push consumer, checked against the DOM library without
// Node's types: the consumer entry point needs nothing but what a browser has.
import { createProtocolStream, envelopesRecovery, subscribeToMercure, type ProtocolObject } from '@relayline/client';

export async function readTurn(threadId: string, hubUrl: string): Promise<ProtocolObject[]> {
  const source = new EventSource(hubUrl, { withCredentials: true });
  const stream = createProtocolStream((callbacks) => subscribeToMercure(source, callbacks, undefined, {
    recovery: envelopesRecovery(`/api/threads/${encodeURIComponent(threadId)}`, { credentials: 'same-origin' }),
  }));
  const events: ProtocolObject[] = [];
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) events.push(read.value);
  source.close();
  return events;
}
