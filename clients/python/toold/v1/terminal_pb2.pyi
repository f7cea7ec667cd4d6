from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AttachOpen(_message.Message):
    __slots__ = ["conversation_secret", "from_index", "new_session", "replay_bytes", "session_id", "size"]
    CONVERSATION_SECRET_FIELD_NUMBER: _ClassVar[int]
    FROM_INDEX_FIELD_NUMBER: _ClassVar[int]
    NEW_SESSION_FIELD_NUMBER: _ClassVar[int]
    REPLAY_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    conversation_secret: str
    from_index: int
    new_session: NewSession
    replay_bytes: int
    session_id: str
    size: TerminalSize
    def __init__(self, session_id: _Optional[str] = ..., new_session: _Optional[_Union[NewSession, _Mapping]] = ..., size: _Optional[_Union[TerminalSize, _Mapping]] = ..., from_index: _Optional[int] = ..., replay_bytes: _Optional[int] = ..., conversation_secret: _Optional[str] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ["input", "open", "resize"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    input: bytes
    open: AttachOpen
    resize: TerminalSize
    def __init__(self, open: _Optional[_Union[AttachOpen, _Mapping]] = ..., input: _Optional[bytes] = ..., resize: _Optional[_Union[TerminalSize, _Mapping]] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = ["attached", "exited", "output"]
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    attached: Attached
    exited: SessionExited
    output: TerminalOutput
    def __init__(self, attached: _Optional[_Union[Attached, _Mapping]] = ..., output: _Optional[_Union[TerminalOutput, _Mapping]] = ..., exited: _Optional[_Union[SessionExited, _Mapping]] = ...) -> None: ...

class Attached(_message.Message):
    __slots__ = ["conversation_secret", "created", "session"]
    CONVERSATION_SECRET_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    conversation_secret: str
    created: bool
    session: TerminalSession
    def __init__(self, session: _Optional[_Union[TerminalSession, _Mapping]] = ..., created: bool = ..., conversation_secret: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["conversation_id"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["sessions"]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[TerminalSession]
    def __init__(self, sessions: _Optional[_Iterable[_Union[TerminalSession, _Mapping]]] = ...) -> None: ...

class NewSession(_message.Message):
    __slots__ = ["close_on_detach", "conversation_id", "name", "shell", "working_dir"]
    CLOSE_ON_DETACH_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    close_on_detach: bool
    conversation_id: str
    name: str
    shell: str
    working_dir: str
    def __init__(self, conversation_id: _Optional[str] = ..., name: _Optional[str] = ..., working_dir: _Optional[str] = ..., shell: _Optional[str] = ..., close_on_detach: bool = ...) -> None: ...

class SessionExited(_message.Message):
    __slots__ = ["exit_code", "outcome"]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    outcome: str
    def __init__(self, outcome: _Optional[str] = ..., exit_code: _Optional[int] = ...) -> None: ...

class TerminalOutput(_message.Message):
    __slots__ = ["data", "dropped", "index"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    dropped: int
    index: int
    def __init__(self, data: _Optional[bytes] = ..., index: _Optional[int] = ..., dropped: _Optional[int] = ...) -> None: ...

class TerminalSession(_message.Message):
    __slots__ = ["attached", "command", "conversation_id", "create_time", "exit_code", "exited", "first_index", "name", "next_index", "outcome", "pid", "session_id", "size", "working_dir"]
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FIRST_INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    attached: int
    command: _containers.RepeatedScalarFieldContainer[str]
    conversation_id: str
    create_time: _timestamp_pb2.Timestamp
    exit_code: int
    exited: bool
    first_index: int
    name: str
    next_index: int
    outcome: str
    pid: int
    session_id: str
    size: TerminalSize
    working_dir: str
    def __init__(self, session_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., name: _Optional[str] = ..., working_dir: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., pid: _Optional[int] = ..., size: _Optional[_Union[TerminalSize, _Mapping]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., exited: bool = ..., outcome: _Optional[str] = ..., exit_code: _Optional[int] = ..., first_index: _Optional[int] = ..., next_index: _Optional[int] = ..., attached: _Optional[int] = ...) -> None: ...

class TerminalSize(_message.Message):
    __slots__ = ["cols", "rows"]
    COLS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    cols: int
    rows: int
    def __init__(self, rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...
