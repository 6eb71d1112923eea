"""Authorization for browsers that subscribe to push delivery: Pusher channel auth and
Mercure subscriber tokens, for the thread's owner only (404 for anyone else).

Subscribing to a thread that does not exist yet claims it for the caller, so a browser
can listen before its first turn without anyone else being able to listen in."""

from __future__ import annotations

import re

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import BadRequest, NotFound

from relayline.channels.mercure import subscriber_token, thread_topic
from relayline.channels.pusher import pusher_client
from relayline.shared.texts import delivery_not_configured, thread_not_found
from relayline.web.auth import check_thread_id, current_user, thread_for
from relayline.web.schemas import PUSHER_CHANNEL_PATTERN, SOCKET_ID_PATTERN
from relayline.web.services import services

bp = Blueprint("push", __name__)

#: seconds a Mercure subscriber token stays valid (EventSource reconnects reuse it)
TOKEN_TTL = 3600
# The patterns the description documents (web.schemas.PusherAuthForm).
_PUSHER_CHANNEL = re.compile(PUSHER_CHANNEL_PATTERN)
_SOCKET_ID = re.compile(SOCKET_ID_PATTERN)


def _claim(thread_id: str) -> str:
    user = current_user()
    if thread_for(thread_id, user) is None:
        services().store.create_thread(thread_id, user)
    if thread_for(thread_id, user) is None:  # someone else claimed it in between
        raise NotFound(thread_not_found(thread_id))
    return thread_id


@bp.post("/pusher/auth")
def pusher_auth() -> Response:
    settings = services().settings
    if not settings.pusher.configured:
        raise NotFound(delivery_not_configured("Pusher"))
    socket_id = request.form.get("socket_id", "")
    channel = request.form.get("channel_name", "")
    match = _PUSHER_CHANNEL.match(channel)
    # Everything is checked before _claim writes a thread row: a refusal writes nothing.
    if _SOCKET_ID.fullmatch(socket_id) is None or match is None:
        raise BadRequest(
            "Pusher auth needs a socket_id of the form <digits>.<digits> and a "
            "private-thread-<id> channel_name."
        )
    encrypted = channel.startswith("private-encrypted-")
    if encrypted != settings.pusher.encrypted:
        raise BadRequest(f"Channel {channel!r} is not the one this server publishes to.")
    _claim(check_thread_id(match.group(1)))
    auth = pusher_client(settings).authenticate(channel=channel, socket_id=socket_id)
    # The SDK hands an encrypted channel's shared secret back as bytes.
    return jsonify({k: v.decode() if isinstance(v, bytes) else v for k, v in auth.items()})


@bp.get("/mercure/token")
def mercure_token() -> Response:
    settings = services().settings
    mercure = settings.mercure
    if not mercure.configured:
        raise NotFound(delivery_not_configured("Mercure"))
    assert mercure.subscriber_jwt_key  # configured says so
    thread_id = _claim(check_thread_id(request.args.get("threadId", "")))
    topic = thread_topic(settings.public_url, thread_id)
    token = subscriber_token(mercure.subscriber_jwt_key, topic, TOKEN_TTL)
    return jsonify({"token": token, "hubUrl": mercure.hub_url, "topic": topic})
