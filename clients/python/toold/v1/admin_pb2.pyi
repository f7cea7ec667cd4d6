from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toold.v1 import tool_pb2 as _tool_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
MCP_SERVER_STATE_AUTHORIZING: McpServerState
MCP_SERVER_STATE_BACKOFF: McpServerState
MCP_SERVER_STATE_CONNECTED: McpServerState
MCP_SERVER_STATE_CONNECTING: McpServerState
MCP_SERVER_STATE_DISABLED: McpServerState
MCP_SERVER_STATE_STOPPED: McpServerState
MCP_SERVER_STATE_UNSPECIFIED: McpServerState

class AddMcpServerRequest(_message.Message):
    __slots__ = ["config", "name"]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    config: McpServerConfig
    name: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Union[McpServerConfig, _Mapping]] = ...) -> None: ...

class AddMcpServerResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: McpServerStatus
    def __init__(self, server: _Optional[_Union[McpServerStatus, _Mapping]] = ...) -> None: ...

class ListMcpServersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListMcpServersResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[McpServerStatus]
    def __init__(self, servers: _Optional[_Iterable[_Union[McpServerStatus, _Mapping]]] = ...) -> None: ...

class McpServerConfig(_message.Message):
    __slots__ = ["args", "command", "cwd", "disabled", "env", "headers", "idle_timeout", "max_timeout", "oauth", "risk", "tool_risk", "type", "url"]
    class EnvEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class HeadersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ToolRiskEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _tool_pb2.RiskLevel
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_tool_pb2.RiskLevel, str]] = ...) -> None: ...
    ARGS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    OAUTH_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    TOOL_RISK_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    args: _containers.RepeatedScalarFieldContainer[str]
    command: str
    cwd: str
    disabled: bool
    env: _containers.ScalarMap[str, str]
    headers: _containers.ScalarMap[str, str]
    idle_timeout: _duration_pb2.Duration
    max_timeout: _duration_pb2.Duration
    oauth: McpServerOAuth
    risk: _tool_pb2.RiskLevel
    tool_risk: _containers.ScalarMap[str, _tool_pb2.RiskLevel]
    type: str
    url: str
    def __init__(self, command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cwd: _Optional[str] = ..., url: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., type: _Optional[str] = ..., risk: _Optional[_Union[_tool_pb2.RiskLevel, str]] = ..., tool_risk: _Optional[_Mapping[str, _tool_pb2.RiskLevel]] = ..., idle_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., disabled: bool = ..., oauth: _Optional[_Union[McpServerOAuth, _Mapping]] = ...) -> None: ...

class McpServerOAuth(_message.Message):
    __slots__ = ["callback_port", "client_id", "client_metadata_url", "client_secret", "grant", "scopes"]
    CALLBACK_PORT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_METADATA_URL_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    callback_port: int
    client_id: str
    client_metadata_url: str
    client_secret: str
    grant: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, client_id: _Optional[str] = ..., client_secret: _Optional[str] = ..., client_metadata_url: _Optional[str] = ..., callback_port: _Optional[int] = ..., scopes: _Optional[_Iterable[str]] = ..., grant: _Optional[str] = ...) -> None: ...

class McpServerStatus(_message.Message):
    __slots__ = ["authorization_url", "config", "error", "name", "next_attempt", "pid", "protocol_version", "refused", "restarts", "server_name", "server_version", "since", "state", "tools", "transport"]
    AUTHORIZATION_URL_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    authorization_url: str
    config: McpServerConfig
    error: str
    name: str
    next_attempt: _timestamp_pb2.Timestamp
    pid: int
    protocol_version: str
    refused: _containers.RepeatedCompositeFieldContainer[RefusedMcpTool]
    restarts: int
    server_name: str
    server_version: str
    since: _timestamp_pb2.Timestamp
    state: McpServerState
    tools: _containers.RepeatedScalarFieldContainer[str]
    transport: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Union[McpServerConfig, _Mapping]] = ..., transport: _Optional[str] = ..., state: _Optional[_Union[McpServerState, str]] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ..., next_attempt: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., restarts: _Optional[int] = ..., pid: _Optional[int] = ..., server_name: _Optional[str] = ..., server_version: _Optional[str] = ..., protocol_version: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., refused: _Optional[_Iterable[_Union[RefusedMcpTool, _Mapping]]] = ..., authorization_url: _Optional[str] = ...) -> None: ...

class ReauthorizeMcpServerRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ReauthorizeMcpServerResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: McpServerStatus
    def __init__(self, server: _Optional[_Union[McpServerStatus, _Mapping]] = ...) -> None: ...

class RefusedMcpTool(_message.Message):
    __slots__ = ["name", "reason"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RemoveMcpServerRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RemoveMcpServerResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class McpServerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
