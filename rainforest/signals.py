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

A signal that lands while Numba compiles or loads a kernel (its own Python code, or llvmlite's)
is not raised there (Ctrl-C's SIGINT included, whose KeyboardInterrupt the block raises as
Python's own handler does): an exception between two of llvmlite's steps can leave an LLVM
object owned twice, freed twice later ("double free detected", the process killed by SIGABRT or SIGSEGV instead
of cleaning up). It is noted and sent again :data:`RETRY_SECONDS` later, by then in code of ours,
or raised by :func:`raise_pending` at the next checkpoint, whichever comes first.
"""
from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The process was asked to end by a signal (SIGTERM, SIGHUP); ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signal.Signals(signum).name}")
        self.signum = signum


_swallowed: list[int] = []  # signals whose Terminated a finaliser dropped, or that landed in the compiler
RETRY_SECONDS = 0.05  # a signal that landed in the compiler is sent again this much later


def in_compiler(frame) -> bool:
    """Whether ``frame`` or one of its callers runs Numba's or llvmlite's own Python code (a file in
    the folders of those packages as imported: not any path that merely names them)."""
    folders = tuple(os.path.join(path, "") for package in ("numba", "llvmlite")
                    for path in getattr(sys.modules.get(package), "__path__", ()))
    while frame is not None and folders:
        if frame.f_code.co_filename.startswith(folders):
            return True
        frame = frame.f_back
    return False


_resending = threading.Lock()  # a signal is sent again, or the handlers restored, never both at once


def _send_again(signum: int) -> None:
    """Send ``signum`` again after :data:`RETRY_SECONDS`, unless a checkpoint raised it meanwhile or the
    block has ended (its handlers restored: a default one would end the process outright)."""
    time.sleep(RETRY_SECONDS)
    with _resending:
        if signum in _swallowed and signal.getsignal(signum) is _raise:
            os.kill(os.getpid(), signum)


def _interrupt(signum: int) -> KeyboardInterrupt:
    """What ``signum`` raises: Ctrl-C's plain KeyboardInterrupt, or :class:`Terminated`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raise(signum, frame):
    if in_compiler(frame):
        if signum not in _swallowed:
            _swallowed.append(signum)
        # a bare thread: threading's own locks may be held by the code this handler interrupted
        _thread.start_new_thread(_send_again, (signum,))
        return
    while signum in _swallowed:
        _swallowed.remove(signum)
    raise _interrupt(signum)


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
    """Raise :class:`Terminated` for a signal whose exception a finaliser dropped, or that landed in
    the compiler (KeyboardInterrupt for SIGINT).

    While an exception is already on its way out (a ``finally`` block during it), that exception
    ends the run instead, and the dropped signal is forgotten.
    """
    if not _swallowed:
        return
    signum = _swallowed[0]
    _swallowed.clear()
    if sys.exc_info()[1] is None:
        raise _interrupt(signum)


@contextlib.contextmanager
def termination_as_interrupt(only_default: bool = False):
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` and SIGINT KeyboardInterrupt,
    none of them inside the compiler (see the module); the former handlers are restored afterwards.

    Parameters
    ----------
    only_default : bool, default=False
        Leave alone a signal whose handler is not the default one (SIGINT's: Python's
        ``signal.default_int_handler``; a library inside someone else's program must not take over
        the handlers it set).

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
        for s in SIGNALS + (signal.SIGINT,):
            current = signal.getsignal(s)
            default = signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL
            if only_default and current is not default:
                continue
            saved[s] = current
            signal.signal(s, _raise)
        if saved:
            sys.unraisablehook = _noting_swallowed(previous_hook)
        yield
    finally:
        with _resending:
            for s, handler in saved.items():
                signal.signal(s, handler)
        if saved:
            sys.unraisablehook = previous_hook
            if sys.exc_info()[1] is not None:  # that exception ends the run: a noted signal goes with it
                _swallowed.clear()
    raise_pending()
