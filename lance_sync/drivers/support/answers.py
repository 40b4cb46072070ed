"""Checking a server's answer where it enters a driver.

Every answer a driver reads is parsed into a model of the shape its API defines (pydantic
models for REST bodies; Glue and Hive check botocore shapes and Thrift structs in their own
modules). A body that does not fit is a `BadAnswerError` naming the backend, the call and
what was wrong: never an empty result.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from lance_sync.drivers.support.retry import BadAnswerError

M = TypeVar("M", bound=BaseModel)

#: how many validation problems a message lists
PROBLEMS_SHOWN = 3
#: how much of a server's error message one of ours keeps
MESSAGE_LIMIT = 500
_HTML_START = ("<!doctype html", "<html")
_HTML_TITLE = re.compile(r"<(title|h1)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")


class UnfitAnswer(Exception):
    """A success body that does not fit the answer its call expects; the message says what is
    wrong, to follow "<backend>: <call> answered " (e.g. "without TableList (body: ...)")."""


class Answer(BaseModel):
    """Base of answer models: unknown members are allowed (servers add fields), types are strict
    enough that a string never passes for a list or a mapping."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


def parse_answer(model: type[M], body: Any, *, backend: str, call: str) -> M:
    """`body` as `model`, or a BadAnswerError that says which members were wrong."""
    if not isinstance(body, dict):
        raise BadAnswerError(f"{backend}: {call} answered {describe_body(body)}, not a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise BadAnswerError(f"{backend}: {call} answered an unexpected shape: "
                             f"{validation_problems(error)}") from None


def validation_problems(error: ValidationError) -> str:
    problems = []
    for problem in error.errors()[:PROBLEMS_SHOWN]:
        where = ".".join(str(part) for part in problem["loc"]) or "(body)"
        problems.append(f"{where}: {problem['msg'].lower()}")
    more = error.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def describe_body(body: Any, limit: int = 80) -> str:
    """A short, single-line picture of an unexpected body for an error message."""
    if body is None:
        return "an empty body"
    text = " ".join(str(body).split())
    shown = text if len(text) <= limit else text[:limit] + "..."
    return f"{type(body).__name__} {shown!r}"


def html_summary(text: str) -> str | None:
    """"an HTML page titled '404 Not Found'" for an HTML page (a proxy's, a servlet container's,
    moto's error pages), None for anything else."""
    if not text.lstrip()[:20].lower().startswith(_HTML_START):
        return None
    found = _HTML_TITLE.search(text)
    if found:
        return f"an HTML page titled {_text_of(found.group(2))[:80]!r}"
    words = _text_of(text)
    return f"an HTML page saying {words[:80]!r}" if words else "an empty HTML page"


def one_line(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """A server's error message for one of ours: an HTML page summarised, whitespace folded, capped."""
    text = html_summary(message) or " ".join(message.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _text_of(html: str) -> str:
    return " ".join(_HTML_TAG.sub(" ", html).split())
