from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuditRecord(_message.Message):
    __slots__ = ["args_digest", "call_id", "code", "conversation_id", "decision", "detail", "exit_code", "grant_id", "kind", "operation", "outcome", "prev", "result_digest", "rule", "scope", "seq", "time", "tool", "who"]
    ARGS_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PREV_FIELD_NUMBER: _ClassVar[int]
    RESULT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    WHO_FIELD_NUMBER: _ClassVar[int]
    args_digest: str
    call_id: str
    code: str
    conversation_id: str
    decision: str
    detail: str
    exit_code: int
    grant_id: str
    kind: str
    operation: str
    outcome: str
    prev: str
    result_digest: str
    rule: str
    scope: str
    seq: int
    time: _timestamp_pb2.Timestamp
    tool: str
    who: str
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[str] = ..., conversation_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., decision: _Optional[str] = ..., rule: _Optional[str] = ..., who: _Optional[str] = ..., scope: _Optional[str] = ..., grant_id: _Optional[str] = ..., args_digest: _Optional[str] = ..., result_digest: _Optional[str] = ..., exit_code: _Optional[int] = ..., outcome: _Optional[str] = ..., code: _Optional[str] = ..., detail: _Optional[str] = ..., prev: _Optional[str] = ...) -> None: ...

class ExportAuditRequest(_message.Message):
    __slots__ = ["from_seq", "since", "until"]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    from_seq: int
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    def __init__(self, from_seq: _Optional[int] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExportAuditResponse(_message.Message):
    __slots__ = ["jsonl"]
    JSONL_FIELD_NUMBER: _ClassVar[int]
    jsonl: bytes
    def __init__(self, jsonl: _Optional[bytes] = ...) -> None: ...

class HistoryEntry(_message.Message):
    __slots__ = ["approver", "arguments_json", "call_id", "conversation_id", "decision", "duration", "error_code", "exit_code", "id", "name", "operation", "outcome", "rule", "started_at", "summary", "tool"]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    approver: str
    arguments_json: str
    call_id: str
    conversation_id: str
    decision: str
    duration: _duration_pb2.Duration
    error_code: str
    exit_code: int
    id: int
    name: str
    operation: str
    outcome: str
    rule: str
    started_at: _timestamp_pb2.Timestamp
    summary: str
    tool: str
    def __init__(self, id: _Optional[int] = ..., conversation_id: _Optional[str] = ..., call_id: _Optional[str] = ..., name: _Optional[str] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., arguments_json: _Optional[str] = ..., decision: _Optional[str] = ..., rule: _Optional[str] = ..., approver: _Optional[str] = ..., outcome: _Optional[str] = ..., error_code: _Optional[str] = ..., exit_code: _Optional[int] = ..., summary: _Optional[str] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class QueryHistoryRequest(_message.Message):
    __slots__ = ["before_id", "conversation_id", "limit", "outcome", "since", "tool", "until"]
    BEFORE_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    before_id: int
    conversation_id: str
    limit: int
    outcome: str
    since: _timestamp_pb2.Timestamp
    tool: str
    until: _timestamp_pb2.Timestamp
    def __init__(self, conversation_id: _Optional[str] = ..., tool: _Optional[str] = ..., outcome: _Optional[str] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., limit: _Optional[int] = ..., before_id: _Optional[int] = ...) -> None: ...

class QueryHistoryResponse(_message.Message):
    __slots__ = ["entries"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HistoryEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[HistoryEntry, _Mapping]]] = ...) -> None: ...

class TailAuditRequest(_message.Message):
    __slots__ = ["count"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class TailAuditResponse(_message.Message):
    __slots__ = ["records"]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[AuditRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[AuditRecord, _Mapping]]] = ...) -> None: ...

class VerifyAuditRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class VerifyAuditResponse(_message.Message):
    __slots__ = ["detail", "files", "first_seq", "last_seq", "ok", "problem", "problem_file", "problem_line", "problem_seq", "pruned", "records"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FILE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_LINE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_SEQ_FIELD_NUMBER: _ClassVar[int]
    PRUNED_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    detail: str
    files: int
    first_seq: int
    last_seq: int
    ok: bool
    problem: str
    problem_file: str
    problem_line: int
    problem_seq: int
    pruned: str
    records: int
    def __init__(self, ok: bool = ..., records: _Optional[int] = ..., files: _Optional[int] = ..., last_seq: _Optional[int] = ..., problem: _Optional[str] = ..., problem_seq: _Optional[int] = ..., problem_file: _Optional[str] = ..., problem_line: _Optional[int] = ..., detail: _Optional[str] = ..., first_seq: _Optional[int] = ..., pruned: _Optional[str] = ...) -> None: ...
