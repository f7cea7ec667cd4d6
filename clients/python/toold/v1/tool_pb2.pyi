from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

APPROVAL_KIND_CALL: ApprovalKind
APPROVAL_KIND_OUTSIDE_SANDBOX: ApprovalKind
APPROVAL_KIND_UNSPECIFIED: ApprovalKind
APPROVAL_MODE_ASK: ApprovalMode
APPROVAL_MODE_AUTO: ApprovalMode
APPROVAL_MODE_UNSPECIFIED: ApprovalMode
APPROVAL_MODE_YOLO: ApprovalMode
DESCRIPTOR: _descriptor.FileDescriptor
ERROR_CODE_APPROVAL_TIMEOUT: ErrorCode
ERROR_CODE_CANCELED: ErrorCode
ERROR_CODE_DENIED: ErrorCode
ERROR_CODE_DISCONNECTED: ErrorCode
ERROR_CODE_DUPLICATE_CALL_ID: ErrorCode
ERROR_CODE_EXECUTION_FAILED: ErrorCode
ERROR_CODE_INTERNAL: ErrorCode
ERROR_CODE_INVALID_ARGUMENTS: ErrorCode
ERROR_CODE_REJECTED_BY_USER: ErrorCode
ERROR_CODE_RESOURCE_EXHAUSTED: ErrorCode
ERROR_CODE_TIMEOUT: ErrorCode
ERROR_CODE_TOOL_NOT_FOUND: ErrorCode
ERROR_CODE_UNAVAILABLE: ErrorCode
ERROR_CODE_UNSPECIFIED: ErrorCode
RISK_LEVEL_HIGH: RiskLevel
RISK_LEVEL_LOW: RiskLevel
RISK_LEVEL_MEDIUM: RiskLevel
RISK_LEVEL_UNSPECIFIED: RiskLevel
TOOL_FORMAT_ANTHROPIC: ToolFormat
TOOL_FORMAT_GEMINI: ToolFormat
TOOL_FORMAT_MCP: ToolFormat
TOOL_FORMAT_OPENAI: ToolFormat
TOOL_FORMAT_UNSPECIFIED: ToolFormat

class ApprovalDecision(_message.Message):
    __slots__ = ["approval_id", "approve", "edited_arguments_json", "reason", "save_as_rule", "scope_id", "ttl"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVE_FIELD_NUMBER: _ClassVar[int]
    EDITED_ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SAVE_AS_RULE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    approve: bool
    edited_arguments_json: str
    reason: str
    save_as_rule: bool
    scope_id: str
    ttl: _duration_pb2.Duration
    def __init__(self, approval_id: _Optional[str] = ..., approve: bool = ..., scope_id: _Optional[str] = ..., reason: _Optional[str] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., save_as_rule: bool = ..., edited_arguments_json: _Optional[str] = ...) -> None: ...

class ApprovalScope(_message.Message):
    __slots__ = ["command_prefix", "description", "host", "kind", "operation", "path_prefix", "scope_id", "tool", "ttl"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    COMMAND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    KIND_CONVERSATION: ApprovalScope.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_ONCE: ApprovalScope.Kind
    KIND_UNSPECIFIED: ApprovalScope.Kind
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PATH_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    command_prefix: str
    description: str
    host: str
    kind: ApprovalScope.Kind
    operation: str
    path_prefix: str
    scope_id: str
    tool: str
    ttl: _duration_pb2.Duration
    def __init__(self, scope_id: _Optional[str] = ..., kind: _Optional[_Union[ApprovalScope.Kind, str]] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., path_prefix: _Optional[str] = ..., command_prefix: _Optional[str] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., description: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class Blob(_message.Message):
    __slots__ = ["data", "mime_type"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    mime_type: str
    def __init__(self, mime_type: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ["call_id", "reason"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    reason: str
    def __init__(self, call_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ClientMessage(_message.Message):
    __slots__ = ["approval", "call", "cancel", "hello", "input"]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    approval: ApprovalDecision
    call: ToolCall
    cancel: Cancel
    hello: Hello
    input: Input
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., call: _Optional[_Union[ToolCall, _Mapping]] = ..., approval: _Optional[_Union[ApprovalDecision, _Mapping]] = ..., cancel: _Optional[_Union[Cancel, _Mapping]] = ..., input: _Optional[_Union[Input, _Mapping]] = ...) -> None: ...

class Coercion(_message.Message):
    __slots__ = ["field", "rule", "to"]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    field: str
    rule: str
    to: str
    def __init__(self, field: _Optional[str] = ..., to: _Optional[str] = ..., rule: _Optional[str] = ..., **kwargs) -> None: ...

class Content(_message.Message):
    __slots__ = ["blob", "json", "text"]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    blob: Blob
    json: str
    text: str
    def __init__(self, text: _Optional[str] = ..., json: _Optional[str] = ..., blob: _Optional[_Union[Blob, _Mapping]] = ...) -> None: ...

class Effect(_message.Message):
    __slots__ = ["command", "commands", "diff", "env", "hosts", "reads", "summary", "working_dir", "writes"]
    class EnvEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    READS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    command: str
    commands: _containers.RepeatedCompositeFieldContainer[ParsedCommand]
    diff: str
    env: _containers.ScalarMap[str, str]
    hosts: _containers.RepeatedScalarFieldContainer[str]
    reads: _containers.RepeatedScalarFieldContainer[str]
    summary: str
    working_dir: str
    writes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reads: _Optional[_Iterable[str]] = ..., writes: _Optional[_Iterable[str]] = ..., command: _Optional[str] = ..., commands: _Optional[_Iterable[_Union[ParsedCommand, _Mapping]]] = ..., diff: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., summary: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., working_dir: _Optional[str] = ...) -> None: ...

class Executing(_message.Message):
    __slots__ = ["pid"]
    PID_FIELD_NUMBER: _ClassVar[int]
    pid: int
    def __init__(self, pid: _Optional[int] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ["approval_mode", "client_name", "conversation_id", "conversation_secret", "dialect", "omit_executing", "resume_after_seq", "resume_stream_id"]
    APPROVAL_MODE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_SECRET_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    OMIT_EXECUTING_FIELD_NUMBER: _ClassVar[int]
    RESUME_AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    RESUME_STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    approval_mode: ApprovalMode
    client_name: str
    conversation_id: str
    conversation_secret: str
    dialect: str
    omit_executing: bool
    resume_after_seq: int
    resume_stream_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., approval_mode: _Optional[_Union[ApprovalMode, str]] = ..., client_name: _Optional[str] = ..., omit_executing: bool = ..., conversation_secret: _Optional[str] = ..., resume_after_seq: _Optional[int] = ..., resume_stream_id: _Optional[str] = ..., dialect: _Optional[str] = ...) -> None: ...

class Input(_message.Message):
    __slots__ = ["call_id", "data", "eof", "request_id", "text"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EOF_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    data: bytes
    eof: bool
    request_id: str
    text: str
    def __init__(self, call_id: _Optional[str] = ..., request_id: _Optional[str] = ..., data: _Optional[bytes] = ..., text: _Optional[str] = ..., eof: bool = ...) -> None: ...

class InputRequired(_message.Message):
    __slots__ = ["approval", "authorize_arguments_json", "authorize_operation", "choices", "prompt", "request_id"]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZE_ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZE_OPERATION_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    approval: bool
    authorize_arguments_json: str
    authorize_operation: str
    choices: _containers.RepeatedScalarFieldContainer[str]
    prompt: str
    request_id: str
    def __init__(self, request_id: _Optional[str] = ..., prompt: _Optional[str] = ..., choices: _Optional[_Iterable[str]] = ..., approval: bool = ..., authorize_operation: _Optional[str] = ..., authorize_arguments_json: _Optional[str] = ...) -> None: ...

class Keepalive(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ["dialect", "flat_operations", "format", "strict"]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    FLAT_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    dialect: str
    flat_operations: bool
    format: ToolFormat
    strict: bool
    def __init__(self, format: _Optional[_Union[ToolFormat, str]] = ..., flat_operations: bool = ..., strict: bool = ..., dialect: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ["dialect", "dialect_version", "rendered_json", "sandbox", "tools", "unavailable"]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    DIALECT_VERSION_FIELD_NUMBER: _ClassVar[int]
    RENDERED_JSON_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    dialect: str
    dialect_version: str
    rendered_json: str
    sandbox: SandboxStatus
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    unavailable: _containers.RepeatedCompositeFieldContainer[UnavailableTool]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., rendered_json: _Optional[str] = ..., unavailable: _Optional[_Iterable[_Union[UnavailableTool, _Mapping]]] = ..., dialect: _Optional[str] = ..., dialect_version: _Optional[str] = ..., sandbox: _Optional[_Union[SandboxStatus, _Mapping]] = ...) -> None: ...

class MessageRejected(_message.Message):
    __slots__ = ["code", "message", "reference_id"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_ID_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    message: str
    reference_id: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., message: _Optional[str] = ..., reference_id: _Optional[str] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ["description", "input_schema", "name", "risk"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    description: str
    input_schema: str
    name: str
    risk: RiskLevel
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., risk: _Optional[_Union[RiskLevel, str]] = ..., input_schema: _Optional[str] = ...) -> None: ...

class OutputChunk(_message.Message):
    __slots__ = ["data", "offset", "stream"]
    class Stream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_PTY: OutputChunk.Stream
    STREAM_STDERR: OutputChunk.Stream
    STREAM_STDOUT: OutputChunk.Stream
    STREAM_UNSPECIFIED: OutputChunk.Stream
    data: bytes
    offset: int
    stream: OutputChunk.Stream
    def __init__(self, stream: _Optional[_Union[OutputChunk.Stream, str]] = ..., data: _Optional[bytes] = ..., offset: _Optional[int] = ...) -> None: ...

class ParsedCommand(_message.Message):
    __slots__ = ["args", "decision", "env", "redirects", "rule", "wrappers"]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    REDIRECTS_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    WRAPPERS_FIELD_NUMBER: _ClassVar[int]
    args: _containers.RepeatedScalarFieldContainer[str]
    decision: str
    env: _containers.RepeatedScalarFieldContainer[str]
    redirects: _containers.RepeatedScalarFieldContainer[str]
    rule: str
    wrappers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, args: _Optional[_Iterable[str]] = ..., wrappers: _Optional[_Iterable[str]] = ..., redirects: _Optional[_Iterable[str]] = ..., decision: _Optional[str] = ..., rule: _Optional[str] = ..., env: _Optional[_Iterable[str]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ["data", "fraction", "message", "output"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    data: _struct_pb2.Struct
    fraction: float
    message: str
    output: OutputChunk
    def __init__(self, message: _Optional[str] = ..., fraction: _Optional[float] = ..., output: _Optional[_Union[OutputChunk, _Mapping]] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RequiresApproval(_message.Message):
    __slots__ = ["approval_id", "effect", "expires_at", "kind", "reason", "risk", "rule", "scopes"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    effect: Effect
    expires_at: _timestamp_pb2.Timestamp
    kind: ApprovalKind
    reason: str
    risk: RiskLevel
    rule: str
    scopes: _containers.RepeatedCompositeFieldContainer[ApprovalScope]
    def __init__(self, approval_id: _Optional[str] = ..., effect: _Optional[_Union[Effect, _Mapping]] = ..., reason: _Optional[str] = ..., rule: _Optional[str] = ..., risk: _Optional[_Union[RiskLevel, str]] = ..., scopes: _Optional[_Iterable[_Union[ApprovalScope, _Mapping]]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[ApprovalKind, str]] = ...) -> None: ...

class SandboxLayer(_message.Message):
    __slots__ = ["detail", "in_force", "name"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    IN_FORCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    detail: str
    in_force: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., in_force: bool = ..., detail: _Optional[str] = ...) -> None: ...

class SandboxStatus(_message.Message):
    __slots__ = ["complete", "enabled", "layers"]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    complete: bool
    enabled: bool
    layers: _containers.RepeatedCompositeFieldContainer[SandboxLayer]
    def __init__(self, enabled: bool = ..., layers: _Optional[_Iterable[_Union[SandboxLayer, _Mapping]]] = ..., complete: bool = ...) -> None: ...

class ServerEvent(_message.Message):
    __slots__ = ["call_id", "end", "executing", "input_required", "keepalive", "progress", "rejected", "requires_approval", "seq", "start", "time", "welcome"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    EXECUTING_FIELD_NUMBER: _ClassVar[int]
    INPUT_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    end: ToolCallEnd
    executing: Executing
    input_required: InputRequired
    keepalive: Keepalive
    progress: Progress
    rejected: MessageRejected
    requires_approval: RequiresApproval
    seq: int
    start: ToolCallStart
    time: _timestamp_pb2.Timestamp
    welcome: Welcome
    def __init__(self, call_id: _Optional[str] = ..., seq: _Optional[int] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., welcome: _Optional[_Union[Welcome, _Mapping]] = ..., start: _Optional[_Union[ToolCallStart, _Mapping]] = ..., requires_approval: _Optional[_Union[RequiresApproval, _Mapping]] = ..., input_required: _Optional[_Union[InputRequired, _Mapping]] = ..., executing: _Optional[_Union[Executing, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., end: _Optional[_Union[ToolCallEnd, _Mapping]] = ..., keepalive: _Optional[_Union[Keepalive, _Mapping]] = ..., rejected: _Optional[_Union[MessageRejected, _Mapping]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ["arguments_json", "arguments_struct", "call_id", "dialect", "name", "timeout", "trace_context"]
    class TraceContextEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_STRUCT_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    arguments_struct: _struct_pb2.Struct
    call_id: str
    dialect: str
    name: str
    timeout: _duration_pb2.Duration
    trace_context: _containers.ScalarMap[str, str]
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., arguments_struct: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., trace_context: _Optional[_Mapping[str, str]] = ..., dialect: _Optional[str] = ...) -> None: ...

class ToolCallEnd(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ToolResult
    def __init__(self, result: _Optional[_Union[ToolResult, _Mapping]] = ...) -> None: ...

class ToolCallStart(_message.Message):
    __slots__ = ["display", "operation", "requested_name", "risk", "tool", "trace_id"]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_NAME_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    display: str
    operation: str
    requested_name: str
    risk: RiskLevel
    tool: str
    trace_id: str
    def __init__(self, requested_name: _Optional[str] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., display: _Optional[str] = ..., risk: _Optional[_Union[RiskLevel, str]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ["code", "field", "message", "rule", "suggestions"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SUGGESTIONS_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    field: str
    message: str
    rule: str
    suggestions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., message: _Optional[str] = ..., suggestions: _Optional[_Iterable[str]] = ..., field: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ["coercions", "content", "duration", "error", "metadata", "structured", "success", "truncation"]
    COERCIONS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_FIELD_NUMBER: _ClassVar[int]
    coercions: _containers.RepeatedCompositeFieldContainer[Coercion]
    content: _containers.RepeatedCompositeFieldContainer[Content]
    duration: _duration_pb2.Duration
    error: ToolError
    metadata: _struct_pb2.Struct
    structured: _struct_pb2.Struct
    success: bool
    truncation: Truncation
    def __init__(self, success: bool = ..., content: _Optional[_Iterable[_Union[Content, _Mapping]]] = ..., structured: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., truncation: _Optional[_Union[Truncation, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., coercions: _Optional[_Iterable[_Union[Coercion, _Mapping]]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ["aliases", "description", "input_schema", "name", "operations", "risk", "source"]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    description: str
    input_schema: str
    name: str
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    risk: RiskLevel
    source: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[str] = ..., operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., risk: _Optional[_Union[RiskLevel, str]] = ..., source: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class Truncation(_message.Message):
    __slots__ = ["continuation", "shown_bytes", "shown_items", "total_bytes", "total_items", "truncated"]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    SHOWN_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHOWN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ITEMS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    continuation: str
    shown_bytes: int
    shown_items: int
    total_bytes: int
    total_items: int
    truncated: bool
    def __init__(self, truncated: bool = ..., shown_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., shown_items: _Optional[int] = ..., total_items: _Optional[int] = ..., continuation: _Optional[str] = ...) -> None: ...

class UnavailableTool(_message.Message):
    __slots__ = ["name", "operations", "reason"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    operations: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, name: _Optional[str] = ..., operations: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ["approval_mode", "conversation_id", "conversation_secret", "max_timeout", "replay_from_seq", "resumed", "sandbox", "server_version", "stream_id", "workspace"]
    APPROVAL_MODE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_SECRET_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    approval_mode: ApprovalMode
    conversation_id: str
    conversation_secret: str
    max_timeout: _duration_pb2.Duration
    replay_from_seq: int
    resumed: bool
    sandbox: SandboxStatus
    server_version: str
    stream_id: str
    workspace: str
    def __init__(self, conversation_id: _Optional[str] = ..., conversation_secret: _Optional[str] = ..., approval_mode: _Optional[_Union[ApprovalMode, str]] = ..., server_version: _Optional[str] = ..., workspace: _Optional[str] = ..., max_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., stream_id: _Optional[str] = ..., resumed: bool = ..., replay_from_seq: _Optional[int] = ..., sandbox: _Optional[_Union[SandboxStatus, _Mapping]] = ...) -> None: ...

class ApprovalMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RiskLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ApprovalKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ToolFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
