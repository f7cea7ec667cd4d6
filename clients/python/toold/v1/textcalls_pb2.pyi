from toold.v1 import tool_pb2 as _tool_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
TEXT_CALL_FORMAT_DEEPSEEK: TextCallFormat
TEXT_CALL_FORMAT_HERMES: TextCallFormat
TEXT_CALL_FORMAT_JSON: TextCallFormat
TEXT_CALL_FORMAT_LEGACY: TextCallFormat
TEXT_CALL_FORMAT_LLAMA3: TextCallFormat
TEXT_CALL_FORMAT_MISTRAL: TextCallFormat
TEXT_CALL_FORMAT_SWE_AGENT: TextCallFormat
TEXT_CALL_FORMAT_TOOL_CODE: TextCallFormat
TEXT_CALL_FORMAT_UNSPECIFIED: TextCallFormat

class ParseToolCallsRequest(_message.Message):
    __slots__ = ["format", "text"]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    format: TextCallFormat
    text: str
    def __init__(self, text: _Optional[str] = ..., format: _Optional[_Union[TextCallFormat, str]] = ...) -> None: ...

class ParseToolCallsResponse(_message.Message):
    __slots__ = ["calls", "format", "remaining_text"]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    REMAINING_TEXT_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[ParsedToolCall]
    format: TextCallFormat
    remaining_text: str
    def __init__(self, calls: _Optional[_Iterable[_Union[ParsedToolCall, _Mapping]]] = ..., remaining_text: _Optional[str] = ..., format: _Optional[_Union[TextCallFormat, str]] = ...) -> None: ...

class ParsedToolCall(_message.Message):
    __slots__ = ["arguments_json", "coercions", "end", "error", "name", "operation", "raw", "resolved_arguments_json", "start", "tool"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    COERCIONS_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    coercions: _containers.RepeatedCompositeFieldContainer[_tool_pb2.Coercion]
    end: int
    error: _tool_pb2.ToolError
    name: str
    operation: str
    raw: str
    resolved_arguments_json: str
    start: int
    tool: str
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., raw: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., tool: _Optional[str] = ..., operation: _Optional[str] = ..., resolved_arguments_json: _Optional[str] = ..., coercions: _Optional[_Iterable[_Union[_tool_pb2.Coercion, _Mapping]]] = ..., error: _Optional[_Union[_tool_pb2.ToolError, _Mapping]] = ...) -> None: ...

class RenderToolPromptRequest(_message.Message):
    __slots__ = ["flat", "format"]
    FLAT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    flat: bool
    format: TextCallFormat
    def __init__(self, format: _Optional[_Union[TextCallFormat, str]] = ..., flat: bool = ...) -> None: ...

class RenderToolPromptResponse(_message.Message):
    __slots__ = ["prompt"]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    def __init__(self, prompt: _Optional[str] = ...) -> None: ...

class TextCallFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
