"""Names that end up in paths, topics and channels, and the templates and prefixes made of them.

One home for three rules, each checked wherever its kind of value comes from:

- a **name** (a bench's, a device's, a pty link's under the run directory) is an identifier:
  letters, digits, '-', '_' and '.', not '.' or '..', at most ``MAX_NAME_LENGTH`` characters;
- an **MQTT topic prefix** (a bench's ``[mqtt] prefix`` or ``signalk_prefix``,
  ``--mqtt-prefix``, the derived ``hild/<bench name>``) holds no wildcard ('+', '#'), no empty
  level, no NUL or other control character, and does not begin with '$' (the broker's own
  topics);
- a **file template** (``record.file`` with ``{bench}`` and ``{utc}``) filled with names stays
  in its folder.
"""

from __future__ import annotations

import os
import re

# 64 characters: a name becomes a file name component (``{bench}`` in record.file, a pty
# link), an MQTT topic level and an MCAP channel, and is shown in log lines and the banner's
# 50-character column. 64 leaves any file system's 255-byte component room for the suffixes
# added to it (".nmea.log", a 16-character UTC stamp) and is longer than any name a person
# types to tell benches and devices apart (a DNS label, the nearest such rule, stops at 63).
MAX_NAME_LENGTH = 64
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
NAME_EXPECTED = (
    f"a name of 1 to {MAX_NAME_LENGTH} letters, digits, '-', '_' and '.' (not '.' or '..'), "
    "e.g. 'odin-trials'"
)


def is_name(text: object) -> bool:
    """Whether ``text`` is a usable name: an identifier that is no path but a file name."""
    return (
        isinstance(text, str)
        and len(text) <= MAX_NAME_LENGTH
        and NAME_PATTERN.fullmatch(text) is not None
        and text not in (".", "..")
    )


TOPIC_PREFIX_EXPECTED = (
    "a topic prefix of levels separated by '/', without the wildcards '+' and '#', empty "
    "levels or control characters, not beginning with '$' (e.g. hild/odin)"
)


def topic_prefix(text: object) -> str | None:
    """The prefix ``text`` names (its leading and trailing '/' dropped), or None when it is no
    topic prefix: a wildcard would make every topic under it a subscription filter that a
    broker refuses to publish to, an empty level a topic nobody subscribes to."""
    if not isinstance(text, str):
        return None
    prefix = text.strip("/")
    if not prefix or prefix.startswith("$") or any(c in prefix for c in "+#"):
        return None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in prefix):
        return None
    if any(level == "" for level in prefix.split("/")):
        return None
    return prefix


PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")  # {name}: what a template fills in


class TemplateError(ValueError):
    """A template that names a placeholder it is not given, or whose filled name would leave
    its folder: says which and where it led."""


def fill_template(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{key}`` replaced by its value, kept in the template's folder.

    Every value must be a name (no separator, not '.' or '..'), and the filled path must lie
    in the folder the template names before its first placeholder: a name cannot move a file
    elsewhere however it combines with the template's own text.
    """
    unknown = sorted(set(PLACEHOLDER.findall(template)) - set(values))
    if unknown:
        known = ", ".join("{" + k + "}" for k in values)
        raise TemplateError(f"{{{unknown[0]}}} is no placeholder here ({known} are)")
    filled = template
    for key, value in values.items():
        placeholder = "{" + key + "}"
        if placeholder not in template:
            continue
        if not is_name(value):
            raise TemplateError(f"{placeholder} = {value!r} is not {NAME_EXPECTED}")
        filled = filled.replace(placeholder, value)
    first = min(
        (template.find("{" + k + "}") for k in values if "{" + k + "}" in template), default=-1
    )
    if first < 0:
        return filled
    folder = os.path.abspath(os.path.dirname(template[:first]) or ".")
    result = os.path.abspath(filled)
    if result == folder or os.path.commonpath([folder, result]) != folder:
        raise TemplateError(f"{template!r} filled is {filled!r}, which is not in {folder}/")
    return filled
