"""Output paths checked before any work: writable, not a folder, not an input, not each other.

A command that would overwrite its own input (``rainforest predict m.json data.parquet --out
data.parquet``) or fail to save after an hour of training is refused at once, with a message
naming the option's target. An input is matched however it is spelled (relative, ``..``,
symbolic links, hard links); an output inside an input folder is refused too, since the next
read of that folder would take it for data.
"""
from __future__ import annotations

import glob
import os

from .atomic import check_writable


def _is_url(path: str) -> bool:
    return "://" in path


def _input_paths(inputs) -> list[str]:
    """The files and folders the inputs name (a glob's matches; URLs are no paths)."""
    out = []
    for spec in inputs:
        if spec is None or _is_url(os.fspath(spec)):
            continue
        spec = os.fspath(spec)
        if os.path.exists(spec):
            out.append(spec)
        else:
            out.extend(glob.glob(spec, recursive=True))
    return out


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: dict, inputs) -> None:
    """Fail, naming the output, if one cannot be written or would overwrite an input or another output.

    Parameters
    ----------
    outputs : dict
        What each output is (e.g. ``"model"``, ``"output file"``) -> its path, or None when not asked for.
    inputs : iterable
        Paths, folders, globs or URLs the command reads (None entries are skipped).

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
        From :func:`rainforest.atomic.check_writable`.
    ValueError
        An output is an input file, lies inside an input folder, or is another output too.
    """
    given = {what: os.fspath(path) for what, path in outputs.items() if path is not None}
    sources = _input_paths(inputs)
    seen: dict[str, str] = {}
    for what, path in given.items():
        for source in sources:
            if os.path.isdir(source):
                inside = os.path.realpath(path).startswith(os.path.join(os.path.realpath(source), ""))
                if inside:
                    raise ValueError(f"the {what} {path!r} lies inside the input folder {source!r}; write it elsewhere")
            elif _same_file(path, source):
                raise ValueError(f"the {what} {path!r} is the input file {source!r}; refusing to overwrite it")
        real = os.path.realpath(path)
        if real in seen:
            raise ValueError(f"the {seen[real]} and the {what} are the same file {path!r}")
        seen[real] = what
        check_writable(path, what)
