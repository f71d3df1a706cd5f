"""What test_ops.py's sections share: this rank, the checks and the failures so far."""
import traceback

from refs import diff, make

RANK = WORLD = 0
checks = 0
failures = []


def fail(what, msg):
    failures.append(what)
    print(f"FAIL rank {RANK}/{WORLD} {what}: {msg}", flush=True)


def expect(what, got, want, exact=False):
    global checks
    checks += 1
    d = diff(got, want, exact)
    if d:
        fail(what, d)


def expect_raises(what, fn, *needles, types=(RuntimeError,)):
    """fn must raise one of types whose message contains one of needles (any, when none given)."""
    global checks
    checks += 1
    try:
        fn()
    except types as e:
        msg = str(e)
        if needles and not any(n.lower() in msg.lower() for n in needles):
            fail(what, f"{type(e).__name__} without any of {needles}: {msg!r}")
        return
    except Exception as e:  # noqa: BLE001 - the wrong type is the failure being reported
        fail(what, f"expected {'/'.join(t.__name__ for t in types)}, got {type(e).__name__}: {e}")
        return
    fail(what, f"expected {'/'.join(t.__name__ for t in types)}, nothing raised")


def section(fn):
    # One broken op must not hide the others: an exception fails the section, the next one runs.
    def run():
        try:
            fn()
        except Exception:  # noqa: BLE001
            fail(fn.__name__, "raised\n" + traceback.format_exc())
    run.__name__ = fn.__name__
    return run


def inputs(n, dtype, op=None, salt="", ranks=None):
    return [make(r, n, dtype, op, salt) for r in (range(WORLD) if ranks is None else ranks)]


def set_rank(rank, world):
    global RANK, WORLD
    RANK, WORLD = rank, world
