"""Tool calls that models without native tool calling write as text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._types import Coercion, ToolErrorInfo, _enum_name
from .v1 import textcalls_pb2, tool_pb2

#: Text tool-call formats by name (None or "auto" detects the format).
TEXT_FORMATS = {
    "auto": textcalls_pb2.TEXT_CALL_FORMAT_UNSPECIFIED,
    "hermes": textcalls_pb2.TEXT_CALL_FORMAT_HERMES,
    "qwen": textcalls_pb2.TEXT_CALL_FORMAT_HERMES,
    "llama3": textcalls_pb2.TEXT_CALL_FORMAT_LLAMA3,
    "mistral": textcalls_pb2.TEXT_CALL_FORMAT_MISTRAL,
    "deepseek": textcalls_pb2.TEXT_CALL_FORMAT_DEEPSEEK,
    "tool_code": textcalls_pb2.TEXT_CALL_FORMAT_TOOL_CODE,
    "gemma": textcalls_pb2.TEXT_CALL_FORMAT_TOOL_CODE,
    "json": textcalls_pb2.TEXT_CALL_FORMAT_JSON,
    "legacy": textcalls_pb2.TEXT_CALL_FORMAT_LEGACY,
    "swe-agent": textcalls_pb2.TEXT_CALL_FORMAT_SWE_AGENT,
}


def text_format(name: Optional[str]) -> int:
    """The enum value of a format name; ValueError names the choices."""
    if name is None:
        return textcalls_pb2.TEXT_CALL_FORMAT_UNSPECIFIED
    try:
        return TEXT_FORMATS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown text call format {name!r}; one of {', '.join(TEXT_FORMATS)}") from None


@dataclass(frozen=True)
class ParsedCall:
    """One call found in a model's text, as toold would run it.

    ``name`` and ``arguments_json`` are as the model wrote them; ``tool``,
    ``operation`` and ``arguments`` are what toold resolved, repaired and
    coerced (send ``name`` and ``arguments`` on a session to run it);
    ``error`` says what to change when it would fail.
    """

    name: str
    arguments_json: str
    raw: str
    start: int
    end: int
    tool: str
    operation: str
    arguments: Optional[Dict[str, Any]]
    coercions: List[Coercion] = field(default_factory=list)
    error: Optional[ToolErrorInfo] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ParsedText:
    """The calls in a model's text, and the text left for the person."""

    calls: List[ParsedCall]
    text: str
    #: "hermes", "llama3", ...; "" when the text held no call.
    format: str


def parsed_from_pb(resp: textcalls_pb2.ParseToolCallsResponse) -> ParsedText:
    calls = []
    for c in resp.calls:
        err = None
        if c.HasField("error"):
            e = c.error
            err = ToolErrorInfo(
                code=_enum_name(tool_pb2.ErrorCode, e.code, "ERROR_CODE_"),
                message=e.message,
                suggestions=list(e.suggestions),
                field=e.field,
                rule=e.rule,
            )
        calls.append(
            ParsedCall(
                name=c.name,
                arguments_json=c.arguments_json,
                raw=c.raw,
                start=c.start,
                end=c.end,
                tool=c.tool,
                operation=c.operation,
                arguments=json.loads(c.resolved_arguments_json) if c.resolved_arguments_json else None,
                coercions=[Coercion(x.field, getattr(x, "from"), x.to, x.rule) for x in c.coercions],
                error=err,
            )
        )
    fmt = _enum_name(textcalls_pb2.TextCallFormat, resp.format, "TEXT_CALL_FORMAT_").lower()
    return ParsedText(calls=calls, text=resp.remaining_text, format="" if fmt == "unspecified" else fmt)
