"""SIGTERM and SIGHUP end a run the way Ctrl-C does: by an exception, so cleanup code runs.

Python's default for SIGTERM and SIGHUP is to die at once, leaving behind what ``finally``
blocks would have removed (spill folders, temporary output files). While
:func:`termination_as_interrupt` is active, either signal raises :class:`Terminated`, a
KeyboardInterrupt, in the main thread instead.

A signal that lands while a finaliser (``__del__``, a weakref callback) runs has its exception
printed and dropped by Python ("Exception ignored in ..."), so the run would go on and end as if
never asked to stop. While the handlers are set, ``sys.unraisablehook`` takes such a dropped
:class:`Terminated` (unprinted), and :func:`raise_pending` raises it again at the next checkpoint:
before a file is renamed into place, per spilled block, and when the block of
:func:`termination_as_interrupt` ends.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The process was asked to end by a signal (SIGTERM, SIGHUP); ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signal.Signals(signum).name}")
        self.signum = signum


_swallowed: list[int] = []  # signals whose Terminated a finaliser dropped


def _raise(signum, frame):
    raise Terminated(signum)


def _noting_swallowed(previous):
    """An ``unraisablehook`` (where Python hands the exceptions it drops) noting a Terminated, which is
    raised again, so not printed as ignored (the run ends saying only which signal ended it); anything
    else goes on to ``previous``."""
    def hook(unraisable):
        if isinstance(unraisable.exc_value, Terminated):
            _swallowed.append(unraisable.exc_value.signum)
            return
        previous(unraisable)
    return hook


def raise_pending() -> None:
    """Raise :class:`Terminated` for a signal whose exception a finaliser dropped.

    While an exception is already on its way out (a ``finally`` block during it), that exception
    ends the run instead, and the dropped signal is forgotten.
    """
    if not _swallowed:
        return
    signum = _swallowed[0]
    _swallowed.clear()
    if sys.exc_info()[1] is None:
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
    previous_hook = sys.unraisablehook
    try:
        for s in SIGNALS:
            current = signal.getsignal(s)
            if only_default and current is not signal.SIG_DFL:
                continue
            saved[s] = current
            signal.signal(s, _raise)
        if saved:
            sys.unraisablehook = _noting_swallowed(previous_hook)
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        if saved:
            sys.unraisablehook = previous_hook
    raise_pending()
