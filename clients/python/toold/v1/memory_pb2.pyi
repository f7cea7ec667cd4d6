from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
TODO_STATUS_CANCELLED: TodoStatus
TODO_STATUS_COMPLETED: TodoStatus
TODO_STATUS_IN_PROGRESS: TodoStatus
TODO_STATUS_PENDING: TodoStatus
TODO_STATUS_UNSPECIFIED: TodoStatus

class GetTodosRequest(_message.Message):
    __slots__ = ["conversation_id"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class GetTodosResponse(_message.Message):
    __slots__ = ["lists"]
    LISTS_FIELD_NUMBER: _ClassVar[int]
    lists: _containers.RepeatedCompositeFieldContainer[TodoList]
    def __init__(self, lists: _Optional[_Iterable[_Union[TodoList, _Mapping]]] = ...) -> None: ...

class Todo(_message.Message):
    __slots__ = ["id", "note", "status", "title"]
    ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    note: str
    status: TodoStatus
    title: str
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., status: _Optional[_Union[TodoStatus, str]] = ..., note: _Optional[str] = ...) -> None: ...

class TodoList(_message.Message):
    __slots__ = ["conversation_id", "todos", "updated", "version"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    todos: _containers.RepeatedCompositeFieldContainer[Todo]
    updated: _timestamp_pb2.Timestamp
    version: int
    def __init__(self, conversation_id: _Optional[str] = ..., todos: _Optional[_Iterable[_Union[Todo, _Mapping]]] = ..., version: _Optional[int] = ..., updated: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WatchTodosRequest(_message.Message):
    __slots__ = ["conversation_id"]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class WatchTodosResponse(_message.Message):
    __slots__ = ["list"]
    LIST_FIELD_NUMBER: _ClassVar[int]
    list: TodoList
    def __init__(self, list: _Optional[_Union[TodoList, _Mapping]] = ...) -> None: ...

class TodoStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
