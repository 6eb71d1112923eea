"""A cancel token's timed wait under gevent (shared.green.wait_or_wake): it times out,
a set from another greenlet wakes it at once, and a set token never blocks. Run in a
patched child process: the test process itself must stay unpatched."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from relayline.shared import green

_CHILD = textwrap.dedent(
    """
    from gevent import monkey
    monkey.patch_all()
    import json, time
    import gevent
    from relayline.shared import green
    from relayline.shared.stop_signal import StopSignal

    out = {"patched": green.patched(), "socket": green.patched("socket")}
    token = StopSignal()
    started = time.monotonic()
    out["timed_out"] = token.wait(0.05)
    out["waited"] = time.monotonic() - started

    woken = gevent.spawn(token.wait, 30)
    gevent.idle()  # the waiter blocks in its wait
    started = time.monotonic()
    token.set()
    out["woken"] = woken.get(timeout=10)
    out["woken_after"] = time.monotonic() - started
    out["set_again"] = token.wait(30)

    early = StopSignal()
    early.set()
    out["early"] = early.wait(30)
    print(json.dumps(out))
    """
)


def test_a_timed_wait_under_gevent_times_out_wakes_on_set_and_never_blocks_once_set() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["patched"] and out["socket"]
    assert out["timed_out"] is False and out["waited"] >= 0.05
    assert out["woken"] is True and out["woken_after"] < 10  # the set, not the 30 s timer
    assert out["set_again"] is True and out["early"] is True


def test_an_unpatched_process_is_not_patched() -> None:
    assert not green.patched() and not green.patched("socket")
