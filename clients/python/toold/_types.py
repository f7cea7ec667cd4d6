"""Plain Python views of toold's messages (the generated ones are in toold.v1)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Dict, List, Optional

from google.protobuf import json_format

from . import errors
from .v1 import tool_pb2


def _enum_name(enum, value: int, prefix: str) -> str:
    try:
        name = enum.Name(value)
    except ValueError:
        return str(value)
    return name[len(prefix):] if name.startswith(prefix) else name


def _struct(s) -> Dict[str, Any]:
    return json_format.MessageToDict(s) if s is not None else {}


def _duration(d) -> timedelta:
    return timedelta(seconds=d.seconds, microseconds=d.nanos // 1000)


@dataclass(frozen=True)
class ToolErrorInfo:
    """Why a call failed: a stable code and a message written for the model."""

    code: str
    message: str
    suggestions: List[str] = field(default_factory=list)
    field: str = ""
    rule: str = ""


@dataclass(frozen=True)
class Truncation:
    """How much of the result the model sees and how to read on."""

    shown_bytes: int
    total_bytes: int
    shown_items: int
    total_items: int
    continuation: str


@dataclass(frozen=True)
class Coercion:
    """An argument toold converted by the schema ("42" -> 42)."""

    field: str
    from_: str
    to: str
    rule: str


@dataclass(frozen=True)
class Result:
    """A call's outcome. A command's non-zero exit is a success with exit_code set."""

    call_id: str
    success: bool
    #: The text parts of the content, joined: what the model should see.
    text: str
    #: JSON parts of the content, decoded.
    json: List[Any]
    structured: Dict[str, Any]
    error: Optional[ToolErrorInfo]
    truncation: Optional[Truncation]
    duration: timedelta
    coercions: List[Coercion]
    metadata: Dict[str, Any]
    #: The ToolResult message as received.
    raw: Any = field(repr=False, compare=False, default=None)

    @property
    def exit_code(self) -> Optional[int]:
        """A command's exit status (run_command, wait); None for other tools."""
        v = self.structured.get("exit_code")
        return int(v) if isinstance(v, (int, float)) else None

    def raise_for_error(self) -> "Result":
        """Raises the ToolCallError subclass of the error's code; returns self on success."""
        if self.error is None:
            return self
        cls = errors.error_class(self.error.code)
        raise cls(
            self.error.code,
            self.error.message,
            self.error.suggestions,
            self.error.field,
            self.error.rule,
            self,
        )

    @classmethod
    def from_pb(cls, call_id: str, r) -> "Result":
        texts, blobs = [], []
        for c in r.content:
            kind = c.WhichOneof("kind")
            if kind == "text":
                texts.append(c.text)
            elif kind == "json":
                try:
                    blobs.append(json.loads(c.json))
                except ValueError:
                    texts.append(c.json)
        err = None
        if r.HasField("error"):
            e = r.error
            err = ToolErrorInfo(
                code=_enum_name(tool_pb2.ErrorCode, e.code, "ERROR_CODE_"),
                message=e.message,
                suggestions=list(e.suggestions),
                field=e.field,
                rule=e.rule,
            )
        trunc = None
        if r.HasField("truncation") and r.truncation.truncated:
            t = r.truncation
            trunc = Truncation(t.shown_bytes, t.total_bytes, t.shown_items, t.total_items, t.continuation)
        return cls(
            call_id=call_id,
            success=r.success,
            text="\n".join(texts),
            json=blobs,
            structured=_struct(r.structured) if r.HasField("structured") else {},
            error=err,
            truncation=trunc,
            duration=_duration(r.duration),
            coercions=[Coercion(c.field, getattr(c, "from"), c.to, c.rule) for c in r.coercions],
            metadata=_struct(r.metadata) if r.HasField("metadata") else {},
            raw=r,
        )


@dataclass(frozen=True)
class Scope:
    """One way to approve a call (ApprovalScope)."""

    scope_id: str
    kind: str  # "ONCE" or "CONVERSATION"
    tool: str
    operation: str
    path_prefix: str
    command_prefix: str
    ttl: Optional[timedelta]
    description: str


@dataclass(frozen=True)
class ApprovalRequest:
    """Policy asks a person before the call runs (RequiresApproval)."""

    call_id: str
    #: The tool name the call used.
    name: str
    #: The call's arguments as the client sent them.
    arguments: Any
    approval_id: str
    reason: str
    rule: str
    risk: str
    summary: str
    command: str
    reads: List[str]
    writes: List[str]
    diff: str
    scopes: List[Scope]
    #: The RequiresApproval message as received (fields added later show here).
    raw: Any = field(repr=False, compare=False, default=None)
    #: What approving does: "CALL" (run the call as usual, a command inside
    #: toold's sandbox) or "OUTSIDE_SANDBOX" (run this one call's command
    #: outside toold's sandbox: show it to a person distinctly, with
    #: ``command``, ``working_dir`` and ``env`` exactly; once only).
    kind: str = "CALL"
    #: The directory the command runs in (relative to the workspace; "" is
    #: its root).
    working_dir: str = ""
    #: The environment variables the call sets for its command.
    env: Dict[str, str] = field(default_factory=dict)

    @property
    def outside_sandbox(self) -> bool:
        """Approving runs this one call's command outside toold's sandbox."""
        return self.kind == "OUTSIDE_SANDBOX"

    def scope(self, kind: str = "CONVERSATION") -> Optional[Scope]:
        """The first offered scope of this kind, if any."""
        return next((s for s in self.scopes if s.kind == kind), None)


@dataclass(frozen=True)
class Decision:
    """An answer to an ApprovalRequest. An approval handler may also return a bool."""

    approve: bool
    #: The scope_id of an offered scope; empty approves once.
    scope_id: str = ""
    #: When denying: why (the model gets it back).
    reason: str = ""
    #: A shorter lifetime for a conversation grant.
    ttl: Optional[timedelta] = None

    @classmethod
    def once(cls) -> "Decision":
        return cls(True)

    @classmethod
    def deny(cls, reason: str = "") -> "Decision":
        return cls(False, reason=reason)


@dataclass(frozen=True)
class InputRequest:
    """A tool asks the person a question (InputRequired); answer with a string."""

    call_id: str
    request_id: str
    prompt: str
    choices: List[str]
    approval: bool
    authorize_operation: str
    raw: Any = field(repr=False, compare=False, default=None)


@dataclass(frozen=True)
class Event:
    """One event of a call, as ``Session.events`` yields it.

    ``kind`` is the ServerEvent oneof name: "start", "requires_approval",
    "input_required", "executing", "progress", "end" or "rejected". ``raw``
    is the ServerEvent message.
    """

    kind: str
    call_id: str
    seq: int
    raw: Any = field(repr=False, compare=False, default=None)
    #: For "end": the result.
    result: Optional[Result] = None

    @property
    def output(self) -> bytes:
        """For "progress" events with an output chunk: its bytes."""
        if self.kind == "progress" and self.raw.progress.HasField("output"):
            return self.raw.progress.output.data
        return b""

    @property
    def stream(self) -> str:
        """For output chunks: "STDOUT", "STDERR" or "PTY"."""
        if self.kind == "progress" and self.raw.progress.HasField("output"):
            return _enum_name(tool_pb2.OutputChunk.Stream, self.raw.progress.output.stream, "STREAM_")
        return ""

    @property
    def message(self) -> str:
        """A progress message or a ToolCallStart display line."""
        if self.kind == "progress":
            return self.raw.progress.message
        if self.kind == "start":
            return self.raw.start.display
        return ""


def approval_from_pb(call_id: str, name: str, arguments: Any, ra) -> ApprovalRequest:
    e = ra.effect
    return ApprovalRequest(
        call_id=call_id,
        name=name,
        arguments=arguments,
        approval_id=ra.approval_id,
        reason=ra.reason,
        rule=ra.rule,
        risk=_enum_name(tool_pb2.RiskLevel, ra.risk, "RISK_LEVEL_"),
        summary=e.summary,
        command=e.command,
        reads=list(e.reads),
        writes=list(e.writes),
        diff=e.diff,
        scopes=[
            Scope(
                scope_id=s.scope_id,
                kind=_enum_name(tool_pb2.ApprovalScope.Kind, s.kind, "KIND_"),
                tool=s.tool,
                operation=s.operation,
                path_prefix=s.path_prefix,
                command_prefix=s.command_prefix,
                ttl=_duration(s.ttl) if s.HasField("ttl") else None,
                description=s.description,
            )
            for s in ra.scopes
        ],
        raw=ra,
        kind=_enum_name(tool_pb2.ApprovalKind, ra.kind, "APPROVAL_KIND_") if ra.kind else "CALL",
        working_dir=e.working_dir,
        env=dict(e.env),
    )
