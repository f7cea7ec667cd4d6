"""toold: an asyncio client for toold, the tool-execution sidecar for LLM agents.

    client = toold.Client()                      # $TOOLD_SOCKET or ./toold.sock
    async with client.session(on_approval=ask) as s:
        result = await s.call("read_file", '{"path": "README.md"}')

The generated protobuf and gRPC modules are ``toold.v1.*_pb2`` and
``toold.v1.*_pb2_grpc``.
"""

from ._client import FORMATS, MODES, Client, FileChange, Session, ToolList, WatchBatch
from ._textcalls import TEXT_FORMATS, ParsedCall, ParsedText
from ._types import (
    ApprovalRequest,
    Coercion,
    Decision,
    Event,
    InputRequest,
    Result,
    Scope,
    ToolErrorInfo,
    Truncation,
)
from .errors import (
    CanceledError,
    DeniedError,
    ExecutionFailedError,
    InternalError,
    InvalidArgumentsError,
    StreamError,
    ToolCallError,
    ToolNotFoundError,
    TooldError,
    ToolTimeoutError,
    UnavailableError,
)

__all__ = [
    "FORMATS", "MODES", "Client", "FileChange", "Session", "ToolList", "WatchBatch", "TEXT_FORMATS", "ParsedCall", "ParsedText",
    "ApprovalRequest", "Coercion", "Decision", "Event", "InputRequest", "Result", "Scope",
    "ToolErrorInfo", "Truncation",
    "CanceledError", "DeniedError", "ExecutionFailedError", "InternalError", "InvalidArgumentsError",
    "StreamError", "ToolCallError", "ToolNotFoundError", "TooldError", "ToolTimeoutError", "UnavailableError",
]
