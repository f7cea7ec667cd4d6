from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CallChanges(_message.Message):
    __slots__ = ["call_id", "changes", "ended_at", "seq", "started_at"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    changes: _containers.RepeatedCompositeFieldContainer[PathChange]
    ended_at: _timestamp_pb2.Timestamp
    seq: int
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, call_id: _Optional[str] = ..., seq: _Optional[int] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., changes: _Optional[_Iterable[_Union[PathChange, _Mapping]]] = ...) -> None: ...

class ChangesRequest(_message.Message):
    __slots__ = ["call_id", "conversation_id", "diff"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    conversation_id: str
    diff: bool
    def __init__(self, conversation_id: _Optional[str] = ..., call_id: _Optional[str] = ..., diff: bool = ...) -> None: ...

class ChangesResponse(_message.Message):
    __slots__ = ["calls"]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[CallChanges]
    def __init__(self, calls: _Optional[_Iterable[_Union[CallChanges, _Mapping]]] = ...) -> None: ...

class PathChange(_message.Message):
    __slots__ = ["after", "before", "diff", "path"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    after: PathState
    before: PathState
    diff: str
    path: str
    def __init__(self, path: _Optional[str] = ..., before: _Optional[_Union[PathState, _Mapping]] = ..., after: _Optional[_Union[PathState, _Mapping]] = ..., diff: _Optional[str] = ...) -> None: ...

class PathState(_message.Message):
    __slots__ = ["kind", "mode", "sha256", "size", "target"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    kind: str
    mode: int
    sha256: str
    size: int
    target: str
    def __init__(self, kind: _Optional[str] = ..., mode: _Optional[int] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ..., target: _Optional[str] = ...) -> None: ...

class RewindAction(_message.Message):
    __slots__ = ["conflict", "current", "done", "error", "op", "path", "target"]
    CONFLICT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    conflict: str
    current: PathState
    done: bool
    error: str
    op: str
    path: str
    target: PathState
    def __init__(self, path: _Optional[str] = ..., op: _Optional[str] = ..., current: _Optional[_Union[PathState, _Mapping]] = ..., target: _Optional[_Union[PathState, _Mapping]] = ..., conflict: _Optional[str] = ..., error: _Optional[str] = ..., done: bool = ...) -> None: ...

class RewindRequest(_message.Message):
    __slots__ = ["call_id", "conversation_id", "dry_run", "force"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    conversation_id: str
    dry_run: bool
    force: bool
    def __init__(self, conversation_id: _Optional[str] = ..., call_id: _Optional[str] = ..., dry_run: bool = ..., force: bool = ...) -> None: ...

class RewindResponse(_message.Message):
    __slots__ = ["actions", "applied", "conflicts", "undone_call_ids"]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    UNDONE_CALL_IDS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[RewindAction]
    applied: bool
    conflicts: int
    undone_call_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, undone_call_ids: _Optional[_Iterable[str]] = ..., actions: _Optional[_Iterable[_Union[RewindAction, _Mapping]]] = ..., applied: bool = ..., conflicts: _Optional[int] = ...) -> None: ...
