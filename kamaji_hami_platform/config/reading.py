"""Reading raw config values: every problem found with its config path, all reported together.

`Problems` collects; `read_section` reads the string, integer and boolean keys of a mapping by its
Section's fields; the section parsers (config/management.py, tenant.py, gpu.py) read the rest.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform.config.fields import Field, Section
from kamaji_hami_platform.config.rules import cidr_pattern
from kamaji_hami_platform.refusal import Refusal


class ConfigError(Refusal):
    """The stack configuration is invalid; `problems` lists every finding (a Refusal: reported
    without a traceback, kamaji_hami_platform/refusal.py)."""

    def __init__(self, problems: list[str], code_only: list[str] | None = None) -> None:
        self.problems = list(problems)
        # The problems found by CODE_ONLY_RULES, which the JSON Schema cannot see.
        self.code_only = list(code_only or ())
        super().__init__("invalid stack configuration:\n  - " + "\n  - ".join(self.problems))


class Problems:
    """Collects problems so that all of them are reported at once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.code_only: list[str] = []

    def add(self, path: str, message: str, rule: str | None = None) -> None:
        """`rule`: the CODE_ONLY_RULES key of a rule the JSON Schema cannot express."""
        problem = f"{path}: {message}"
        self.items.append(problem)
        if rule is not None:
            self.code_only.append(problem)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def mapping(value: Any, path: str, problems: Problems) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.add(path, f"must be a mapping, got {type(value).__name__}")
        return {}
    return value


def _unknown_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str,
                  problems: Problems) -> None:
    for key in obj:
        if key not in allowed:
            problems.add(f"{path}.{key}", f"unknown key (allowed: {', '.join(allowed)})")


def _string(obj: Mapping[str, Any], key: str, path: str, problems: Problems,
            default: str | None = None) -> str | None:
    value = obj.get(key, default)
    if value is None:
        problems.add(f"{path}.{key}", "is required")
        return None
    if not isinstance(value, str) or not value:
        problems.add(f"{path}.{key}", f"must be a non-empty string, got {value!r}")
        return None
    return value


def integer(obj: Mapping[str, Any], key: str, path: str, problems: Problems,
             default: int | None = None, minimum: int = 1,
             maximum: int | None = None) -> int | None:
    value = obj.get(key, default)
    if value is None:
        problems.add(f"{path}.{key}", "is required")
        return None
    if not is_int(value):
        integral = isinstance(value, float) and value.is_integer()
        problems.add(f"{path}.{key}", f"must be an integer, got {value!r}",
                     "integral-float" if integral else None)
        return None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        qualifier = "positive, " if minimum == 1 else ""
        problems.add(f"{path}.{key}", f"must be {qualifier}{bound}, got {value}")
        return None
    return value


def _boolean(obj: Mapping[str, Any], key: str, path: str, problems: Problems, default: bool) -> bool | None:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        problems.add(f"{path}.{key}", f"must be true or false, got {value!r}")
        return None
    return value


def ipv4_network(value: str | None, path: str, problems: Problems,
                  min_prefix: int, max_prefix: int) -> ipaddress.IPv4Network | None:
    if value is None:
        return None
    # Text the schema's pattern accepts and ipaddress refuses: host bits or a written-out mask.
    rule = "cidr-value" if re.fullmatch(cidr_pattern(min_prefix, max_prefix), value) else None
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        problems.add(path, f"{value!r} is not a valid CIDR ({error})", rule)
        return None
    if not isinstance(network, ipaddress.IPv4Network):
        problems.add(path, f"{value!r} must be an IPv4 CIDR")
        return None
    if not min_prefix <= network.prefixlen <= max_prefix:
        problems.add(path, f"{value!r} must have a prefix between /{min_prefix} and /{max_prefix}", rule)
        return None
    return network


def _text_ok(spec: Field, value: str, path: str, problems: Problems) -> bool:
    """The string rules of a key: enum, checks (the first broken one reports), reserved words, CIDR."""
    if spec.enum and value not in spec.enum:
        problems.add(path, f"{value!r} must be one of {', '.join(spec.enum)}")
        return False
    broken = next((check for check in spec.checks if not check.passes(value)), None)
    if broken is not None:
        problems.add(path, broken.message.format(value=value))
    reserved = value in spec.reserved
    if reserved:
        problems.add(path, spec.reserved_message.format(value=value))
    if spec.cidr_prefix is not None:
        return ipv4_network(value, path, problems, *spec.cidr_prefix) is not None
    return broken is None and not reserved


def _read_value(obj: Mapping[str, Any], spec: Field, path: str, problems: Problems,
                default: Any) -> tuple[Any, bool]:
    """(value, valid) of one string, integer or boolean key."""
    if spec.type == "integer":
        number = integer(obj, spec.key, path, problems, default, spec.minimum or 0, spec.maximum)
        return number, number is not None
    if spec.type == "boolean":
        flag = _boolean(obj, spec.key, path, problems, default)
        return flag, flag is not None
    text = _string(obj, spec.key, path, problems, default)
    return text, text is not None and _text_ok(spec, text, f"{path}.{spec.key}", problems)


def read_section(obj: Mapping[str, Any], section: Section, path: str, problems: Problems,
                  defaults: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], set[str]]:
    """Unknown keys, then every string, integer and boolean key of `section` by its Field: the
    values (a default where absent) and the keys whose value is invalid."""
    _unknown_keys(obj, section.keys, path, problems)
    values: dict[str, Any] = {}
    invalid: set[str] = set()
    for spec in section.fields:
        if spec.type in ("object", "array") or spec.in_code:
            continue
        default = (defaults or {}).get(spec.key, spec.default)
        if obj.get(spec.key) is None and default is None and not spec.required:
            values[spec.key] = None  # optional, without a default: absent
            continue
        values[spec.key], valid = _read_value(obj, spec, path, problems, default)
        if not valid:
            invalid.add(spec.key)
    return values, invalid
