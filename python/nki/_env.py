"""_env.py: the NKI front end's TRNEMU_NKI_* variables, read by the rules
of the runtime's one parser (devices/config/env.c, docs/env.md), so that a
spelling the runtime accepts or refuses is accepted or refused here too
(tests/python/test_env_rules.py checks the two agree):

- booleans: 0, 1, true, false, yes, no (any case);
- whole numbers: decimal digits, or hex with 0x, nothing before or after,
  in the variable's range ("010" is ten);
- durations: seconds (a decimal number, fractional allowed) or with an s
  or ms suffix, at most the variable's limit;
- words: one of the variable's words, any case.

Unset or empty: the default. A malformed value is an NKIError naming the
variable and what it accepts, in the runtime's words.
"""
import os
import re

_UINT = re.compile(r"([0-9]+|0[xX][0-9a-fA-F]+)\Z")
_DURATION = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?(s|ms)?\Z")


def parse_bool(text):
    """True/False for a boolean spelling, None when malformed."""
    t = text.lower()
    if t in ("1", "true", "yes"):
        return True
    if t in ("0", "false", "no"):
        return False
    return None


def parse_uint(text, lo, hi):
    """The whole number text spells if it lies in [lo, hi], else None."""
    if not _UINT.match(text):
        return None
    v = int(text, 16) if text[:2] in ("0x", "0X") else int(text, 10)
    return v if lo <= v <= hi else None


def parse_ms(text, max_s):
    """A duration in ms (rounded) if at most max_s seconds, else None."""
    m = _DURATION.match(text)
    if m is None:
        return None
    v = float(m.group(1) + (m.group(2) or ""))
    scale = 1.0 if m.group(3) == "ms" else 1000.0
    if v * scale > max_s * 1000.0:
        return None
    return int(v * scale + 0.5)


def parse_choice(text, words):
    """The word (as listed) text names, any case, else None."""
    for w in words:
        if w.lower() == text.lower():
            return w
    return None


def _fail(var, text, accepts):
    from ._core.context import NKIError
    raise NKIError("%s='%s': expected %s" % (var, text, accepts))


def _raw(var):
    return os.environ.get(var, "")


def read_bool(var, default):
    """Variable var as a boolean; default when unset."""
    text = _raw(var)
    if text == "":
        return default
    v = parse_bool(text)
    if v is None:
        _fail(var, text, "a boolean (0, 1, true, false, yes or no)")
    return v


def read_uint(var, lo, hi, default):
    """Variable var as a whole number in [lo, hi]; default when unset."""
    text = _raw(var)
    if text == "":
        return default
    v = parse_uint(text, lo, hi)
    if v is None:
        _fail(var, text, "a whole number from %d to %d" % (lo, hi))
    return v


def read_seconds(var, max_s, default_s):
    """Variable var as a duration, in seconds; default_s when unset."""
    text = _raw(var)
    if text == "":
        return default_s
    ms = parse_ms(text, max_s)
    if ms is None:
        _fail(var, text, "a duration in seconds up to %d (e.g. 30, 2.5, 10s or 500ms)" % max_s)
    return ms / 1000.0


def read_choice(var, words, default):
    """Variable var as one of words (any case); default when unset."""
    text = _raw(var)
    if text == "":
        return default
    w = parse_choice(text, words)
    if w is None:
        _fail(var, text, "one of %s (any case)" % ",".join(words))
    return w
