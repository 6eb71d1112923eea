// The page's `sendAutomaticallyWhen`, as the reference prescribes for relayline's
// stream (spec 6.8):
//
// - look only at the tool parts of the current step: those after the last `step-start`
//   of the last message (an assistant message); earlier steps hold answers the backend
//   already has, and resubmitting them is refused;
// - never send while any of them is `approval-requested`;
// - send when any is `approval-responded`, or when all are settled (`output-available`,
//   `output-error`, `output-denied`); in eager mode, as soon as any is answered;
// - remember what was sent: an answer goes out once, so a response that leaves a part
//   as it was never triggers the same request again.
import { isToolUIPart } from 'ai';

const SETTLED = new Set(['output-available', 'output-error', 'output-denied']);

/** The tool parts after the last `step-start` of `message`. */
export function currentStepToolParts(message) {
  const parts = message?.parts ?? [];
  const lastStep = parts.findLastIndex((part) => part.type === 'step-start');
  return parts.slice(lastStep + 1).filter(isToolUIPart);
}

/** What the page answered for a part, as a key: a part answers at most once per state. */
function answerKey(part) {
  if (part.state === 'approval-responded') return `${part.toolCallId}:approval:${part.approval.approved}`;
  return `${part.toolCallId}:${part.state}`;
}

/**
 * A `sendAutomaticallyWhen` predicate. `eager` submits each result as soon as it is
 * there (the backend keeps accepted results while the other calls stay pending);
 * otherwise results go out once the whole step is settled. `onDecision` sees every
 * decision: `{send, answers}` (the answer keys a send carried).
 */
export function createAutoSend({ eager = false, onDecision = () => {} } = {}) {
  const sent = new Set();
  return ({ messages }) => {
    const last = messages.at(-1);
    const parts = last?.role === 'assistant' ? currentStepToolParts(last) : [];
    const waiting = parts.some((part) => part.state === 'approval-requested');
    const answered = parts.filter(
      (part) => part.state === 'approval-responded' || SETTLED.has(part.state),
    );
    const fresh = answered.map(answerKey).filter((key) => !sent.has(key));
    const decided = answered.some(
      (part) => part.state === 'approval-responded' && fresh.includes(answerKey(part)),
    );
    const complete = parts.every((part) => SETTLED.has(part.state));
    const send = !waiting && fresh.length > 0 && (decided || complete || eager);
    if (send) fresh.forEach((key) => sent.add(key));
    onDecision({ send, answers: send ? fresh : [] });
    return send;
  };
}
