"""The platform's shell scripts as template files, filled in with values from the config.

Each script the platform runs is a file in a `scripts/` folder of the package that runs it
(`management/scripts/`, `tenant/scripts/`, `scripts/`): `*.sh` for POSIX sh, `*.bash` for bash.
`make test` lints every template as rendered with shellcheck (tests/project/test_shell_scripts.py).
A resource stores the rendered text, never a path: a `delete` that runs after the code changed
still runs what was rendered when the resource was created.

In a template, `@name@` is a value of `render`'s keywords:

- a `str`: a shell word, inserted quoted (`shlex.quote`: unchanged when it needs no quotes);
- an `int`: its digits;
- a `Text`: a name, or words of a message in double quotes, inserted as they are: no double
  quote, `$`, backquote, backslash or newline, so it can never end or expand the string it stands
  in (in single quotes, templates take names and paths only, which hold no apostrophe);
- a `Shell`: shell code rendered elsewhere (another template, a command line built from quoted
  words), inserted as it is. On a line of its own it stands for whole lines: the line is replaced
  by the code, which is empty or ends with a newline.

A placeholder without a value, or a value no placeholder takes, is an error: a typo never renders.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from importlib import resources

PLACEHOLDER = re.compile(r"@([a-z][a-z0-9_]*)@")
# One pass, so a value is never read as a template: a placeholder that is a whole line, or any other.
_ANY_PLACEHOLDER = re.compile(r"^@([a-z][a-z0-9_]*)@\n|@([a-z][a-z0-9_]*)@", re.M)
# What a Text may not hold: anything that ends a double-quoted string or expands in one.
_UNSAFE_IN_TEXT = re.compile(r"[\"$`\\\n]")
TEMPLATE_DIR = "scripts"
DIALECTS = {".sh": "sh", ".bash": "bash"}

# Every template `render` has read in this process, by (package, name): the lint test checks that
# its renders reach every template file.
_loaded: set[tuple[str, str]] = set()


class Text(str):
    """Words of a message inside a quoted string (a name, a version, a sentence)."""

    __slots__ = ()


class Shell(str):
    """Shell code rendered elsewhere, inserted as it is."""

    __slots__ = ()


@cache
def _template(package: str, name: str) -> str:
    return (resources.files(package) / TEMPLATE_DIR / name).read_text()


def template(package: str, name: str, /) -> str:
    """The text of a template file of `package` (e.g. `kamaji_hami_platform.tenant`)."""
    _loaded.add((package, name))
    return _template(package, name)


def loaded() -> set[tuple[str, str]]:
    return set(_loaded)


def forget_loaded() -> None:
    """Start `loaded` afresh (a test that asks which templates its own renders reached)."""
    _loaded.clear()


def _word(name: str, value: object) -> str:
    if isinstance(value, Shell):
        return str(value)
    if isinstance(value, Text):
        if _UNSAFE_IN_TEXT.search(value):
            raise ValueError(f"@{name}@: {value!r} is not plain text (a double quote, $, backquote, "
                             "backslash or newline): pass it as a str, which is quoted")
        return str(value)
    if isinstance(value, bool):
        raise TypeError(f"@{name}@: a bool has no shell spelling; pass the text the script needs")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return shlex.quote(value)
    raise TypeError(f"@{name}@: {type(value).__name__} is not a str, int, Text or Shell")


def fill(text: str, values: dict[str, object], where: str) -> str:
    """`text` with every placeholder replaced (see the module's docstring)."""
    wanted = set(PLACEHOLDER.findall(text))
    missing, unused = wanted - set(values), set(values) - wanted
    if missing or unused:
        raise KeyError(f"{where}: no value for {sorted(missing)}; no placeholder for {sorted(unused)}")

    def replace(match: re.Match[str]) -> str:
        line, inline = match.groups()
        if inline is not None:
            return _word(inline, values[inline])
        value = values[line]
        if not isinstance(value, Shell):
            return _word(line, value) + "\n"
        if value and not value.endswith("\n"):
            raise ValueError(f"{where}: @{line}@ stands for whole lines; its code must end with a newline")
        return str(value)

    return _ANY_PLACEHOLDER.sub(replace, text)


def render(package: str, name: str, /, **values: object) -> str:
    """The template `name` of `package`, filled in."""
    return fill(template(package, name), values, f"{package}/{TEMPLATE_DIR}/{name}")
