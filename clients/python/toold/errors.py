"""Exceptions of the toold client.

A call that toold ran and that failed is a result (``Result.success`` is
False): a model should see the error and act on it. ``Result.raise_for_error``
(or ``Session.call(..., check=True)``) turns it into one exception class per
ErrorCode family. The stream itself failing (the daemon went away, a bad
token) raises ``StreamError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ._types import Result


class TooldError(Exception):
    """Base class of every error this package raises."""


class StreamError(TooldError):
    """The connection or the ExecuteTool stream failed; calls on it ended.

    ``code`` is the gRPC status code name ("UNAVAILABLE", "UNAUTHENTICATED",
    ...) when known.
    """

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code


class ToolCallError(TooldError):
    """A call ended with an error. Subclasses name the ErrorCode family."""

    #: ErrorCode names (without the ERROR_CODE_ prefix) of this family.
    codes: Sequence[str] = ()

    def __init__(
        self,
        code: str,
        message: str,
        suggestions: Sequence[str] = (),
        field: str = "",
        rule: str = "",
        result: "Optional[Result]" = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.suggestions = list(suggestions)
        self.field = field
        self.rule = rule
        self.result = result


class ToolNotFoundError(ToolCallError):
    """No tool has the name; ``suggestions`` lists the closest ones."""

    codes = ("TOOL_NOT_FOUND",)


class InvalidArgumentsError(ToolCallError):
    """The arguments break the schema (``field``, ``rule``) or the call_id is taken."""

    codes = ("INVALID_ARGUMENTS", "DUPLICATE_CALL_ID")


class DeniedError(ToolCallError):
    """Policy or a person refused the call, or nobody answered; nothing was done."""

    codes = ("DENIED", "REJECTED_BY_USER", "APPROVAL_TIMEOUT")


class ToolTimeoutError(ToolCallError):
    """The call ran past its timeout and was stopped."""

    codes = ("TIMEOUT",)


class CanceledError(ToolCallError):
    """The call was canceled (by the client, a shutdown or the stream's end)."""

    codes = ("CANCELED", "DISCONNECTED")


class ExecutionFailedError(ToolCallError):
    """The tool ran and failed."""

    codes = ("EXECUTION_FAILED",)


class UnavailableError(ToolCallError):
    """A dependency is down or a limit was reached; retrying later may work."""

    codes = ("UNAVAILABLE", "RESOURCE_EXHAUSTED")


class InternalError(ToolCallError):
    """A bug in toold (or a code this client does not know)."""

    codes = ("INTERNAL",)


_BY_CODE = {
    code: cls
    for cls in (
        ToolNotFoundError,
        InvalidArgumentsError,
        DeniedError,
        ToolTimeoutError,
        CanceledError,
        ExecutionFailedError,
        UnavailableError,
        InternalError,
    )
    for code in cls.codes
}


def error_class(code: str) -> type:
    """Returns the exception class of an ErrorCode name ("DENIED")."""
    return _BY_CODE.get(code, InternalError)
