"""How names reach the text of an export that no emitter writes: shell words and comment lines; and
names made unique within an export's length limit.

A name is data: it must never become a command of the AWS script nor a line (or a document) of the
Kueue YAML, whatever it holds. The validator refuses control characters in names, but a Policy built
in code, or stored before that rule, is exported all the same, so the exports escape as well.
"""

from __future__ import annotations

import shlex


def shell_word(word: str) -> str:
    """``word`` as one sh word: as it is when it holds only safe characters (AWS names and file names
    stay readable), otherwise single-quoted (``shlex.quote``)."""
    return shlex.quote(word)


def comment_text(text: str) -> str:
    """``text`` for a one-line comment of a script or a YAML file: each character that is not
    printable (line breaks of any kind, escapes, direction marks) written as its escape sequence."""
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text
    )


def unique_name(name: str, used: set[str], longest: int) -> str:
    """``name``, or ``name-2``, ``name-3``... (cut to stay within ``longest`` characters), the first
    not in ``used``; added to ``used``."""
    candidate, n = name, 2
    while candidate in used:
        suffix = f"-{n}"
        candidate, n = name[: longest - len(suffix)] + suffix, n + 1
    used.add(candidate)
    return candidate
