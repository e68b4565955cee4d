"""SIGTERM and SIGHUP end a run the way Ctrl-C does: by an exception, so cleanup code runs.

Python's default for SIGTERM and SIGHUP is to die at once, leaving behind what ``finally``
blocks would have removed (spill folders, temporary output files). While
:func:`termination_as_interrupt` is active, either signal raises :class:`Terminated`, a
KeyboardInterrupt, in the main thread instead.
"""
from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The process was asked to end by a signal (SIGTERM, SIGHUP); ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signal.Signals(signum).name}")
        self.signum = signum


def _raise(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def termination_as_interrupt(only_default: bool = False):
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated`; the former handlers are
    restored afterwards.

    Parameters
    ----------
    only_default : bool, default=False
        Leave alone a signal whose handler is not the default one (a library inside someone
        else's program must not take over the handlers it set).

    Notes
    -----
    Signal handlers can only be set in the main thread; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {}
    try:
        for s in SIGNALS:
            current = signal.getsignal(s)
            if only_default and current is not signal.SIG_DFL:
                continue
            saved[s] = current
            signal.signal(s, _raise)
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
