"""The exceptions of bad input. All are `ConfigError` (a `ValueError`) with a one-line message and
a `field` attribute naming the option at fault; two are also the built-in exceptions Python code
expects: an unknown option name is a `TypeError` (as an unknown keyword argument is), a file that
does not exist a `FileNotFoundError`."""

from __future__ import annotations

import difflib
import errno
from typing import List, Optional, Sequence

from ._core import ConfigError


class UnknownOptionError(ConfigError, TypeError):
    """An option name disagg does not know. `field` is the name, `matches` the close matches among
    the valid names (`valid`)."""

    field: Optional[str]
    matches: List[str]
    valid: List[str]


class MissingFileError(FileNotFoundError, ConfigError):
    """An input file that does not exist. `field` is the option that names it, `filename` the
    path."""

    field: Optional[str]


def unknown_option(name: str, valid: Sequence[str]) -> UnknownOptionError:
    """The error for option `name`, with its close matches among `valid`."""
    matches = difflib.get_close_matches(name, list(valid), n=3, cutoff=0.6)
    msg = f"unknown option '{name}'"
    if matches:
        msg += "; did you mean " + " or ".join(f"'{m}'" for m in matches) + "?"
    msg += " (disagg.options() lists every option)"
    e = UnknownOptionError(msg)
    e.field = name
    e.matches = matches
    e.valid = list(valid)
    return e


def missing_file(field: str, path: str) -> MissingFileError:
    """The error for a `field` naming `path`, which does not exist."""
    e = MissingFileError(errno.ENOENT, f"{field}: no such file", path)
    e.field = field
    return e
