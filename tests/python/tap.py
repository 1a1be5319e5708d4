"""tap.py: a small TAP producer for the Python front's tests (tests/python/), as tests/tap.h is
for the C ones: ok/is_/raises, diagnostics, a whole-file skip, a watchdog (GPAR_TEST_TIMEOUT,
default 120 s), and an exit status that reflects the result."""
import os
import signal
import sys

_count = 0
_failed = 0


def _on_alarm(signum, frame):
    sys.stdout.write("Bail out! timeout\n")
    sys.stdout.flush()
    os._exit(1)


signal.signal(signal.SIGALRM, _on_alarm)
signal.alarm(int(os.environ.get("GPAR_TEST_TIMEOUT", "120")))


def diag(msg):
    for line in str(msg).splitlines() or [""]:
        print("# " + line, flush=True)


def ok(cond, name):
    global _count, _failed
    _count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (_count, name), flush=True)
    if not cond:
        _failed += 1
    return bool(cond)


def is_(got, want, name):
    r = ok(got == want, name)
    if not r:
        diag("  got: %r\n  want: %r" % (got, want))
    return r


def raises(fn, status_name, name, contains=None):
    """fn() must raise gpar.Error whose .name is status_name (and whose message holds contains)."""
    import gpar
    try:
        fn()
    except gpar.Error as e:
        good = e.name == status_name and (contains is None or contains in e.message)
        r = ok(good, name)
        if not r:
            diag("  raised %s: %s (want %s%s)" % (e.name, e.message, status_name,
                                                  ", message with %r" % contains if contains else ""))
        else:
            diag("  %s: %s" % (e.name, e.message))
        return r
    except Exception as e:  # noqa: BLE001 - any other exception is this test's failure
        ok(False, name)
        diag("  raised %s: %s (want gpar.Error %s)" % (type(e).__name__, e, status_name))
        return False
    ok(False, name)
    diag("  nothing raised (want %s)" % status_name)
    return False


def skip(n, reason):
    global _count
    for _ in range(n):
        _count += 1
        print("ok %d # SKIP %s" % (_count, reason), flush=True)


def skip_all(reason):
    print("1..0 # SKIP %s" % reason, flush=True)
    sys.exit(0)


def done():
    print("1..%d" % _count, flush=True)
    sys.exit(1 if _failed else 0)
