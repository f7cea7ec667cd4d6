from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toold.v1 import tool_pb2 as _tool_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DECISION_ALLOW: Decision
DECISION_ASK: Decision
DECISION_DENY: Decision
DECISION_UNSPECIFIED: Decision
DESCRIPTOR: _descriptor.FileDescriptor

class ExplainRequest(_message.Message):
    __slots__ = ["approval_mode", "arguments_json", "arguments_struct", "conversation_id", "name"]
    APPROVAL_MODE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_STRUCT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    approval_mode: _tool_pb2.ApprovalMode
    arguments_json: str
    arguments_struct: _struct_pb2.Struct
    conversation_id: str
    name: str
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., arguments_struct: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., conversation_id: _Optional[str] = ..., approval_mode: _Optional[_Union[_tool_pb2.ApprovalMode, str]] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ["approval_mode", "decision", "effect", "error", "grant", "operation", "reason", "risk", "rule", "scopes", "tool"]
    APPROVAL_MODE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    approval_mode: _tool_pb2.ApprovalMode
    decision: Decision
    effect: _tool_pb2.Effect
    error: _tool_pb2.ToolError
    grant: Grant
    operation: str
    reason: str
    risk: _tool_pb2.RiskLevel
    rule: str
    scopes: _containers.RepeatedCompositeFieldContainer[_tool_pb2.ApprovalScope]
    tool: str
    def __init__(self, decision: _Optional[_Union[Decision, str]] = ..., reason: _Optional[str] = ..., rule: _Optional[str] = ..., risk: _Optional[_Union[_tool_pb2.RiskLevel, str]] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., effect: _Optional[_Union[_tool_pb2.Effect, _Mapping]] = ..., scopes: _Optional[_Iterable[_Union[_tool_pb2.ApprovalScope, _Mapping]]] = ..., grant: _Optional[_Union[Grant, _Mapping]] = ..., approval_mode: _Optional[_Union[_tool_pb2.ApprovalMode, str]] = ..., error: _Optional[_Union[_tool_pb2.ToolError, _Mapping]] = ...) -> None: ...

class Grant(_message.Message):
    __slots__ = ["conversation_id", "created_at", "expires_at", "grant_id", "granted_by", "once", "scope"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    GRANTED_BY_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    ONCE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    grant_id: str
    granted_by: str
    once: bool
    scope: _tool_pb2.ApprovalScope
    def __init__(self, grant_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., scope: _Optional[_Union[_tool_pb2.ApprovalScope, _Mapping]] = ..., once: bool = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., granted_by: _Optional[str] = ...) -> None: ...

class ListGrantsRequest(_message.Message):
    __slots__ = ["conversation_id"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class ListGrantsResponse(_message.Message):
    __slots__ = ["grants"]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    grants: _containers.RepeatedCompositeFieldContainer[Grant]
    def __init__(self, grants: _Optional[_Iterable[_Union[Grant, _Mapping]]] = ...) -> None: ...

class RevokeGrantRequest(_message.Message):
    __slots__ = ["grant_id"]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    grant_id: str
    def __init__(self, grant_id: _Optional[str] = ...) -> None: ...

class RevokeGrantResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
