from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FILE_CHANGE_KIND_CHANGED: FileChangeKind
FILE_CHANGE_KIND_CREATED: FileChangeKind
FILE_CHANGE_KIND_REMOVED: FileChangeKind
FILE_CHANGE_KIND_UNSPECIFIED: FileChangeKind

class FileChange(_message.Message):
    __slots__ = ["directory", "kind", "path"]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    directory: bool
    kind: FileChangeKind
    path: str
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[_Union[FileChangeKind, str]] = ..., directory: bool = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ["coalesce_ms", "conversation_id", "max_directories", "path", "recursive"]
    COALESCE_MS_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    coalesce_ms: int
    conversation_id: str
    max_directories: int
    path: str
    recursive: bool
    def __init__(self, path: _Optional[str] = ..., recursive: bool = ..., conversation_id: _Optional[str] = ..., coalesce_ms: _Optional[int] = ..., max_directories: _Optional[int] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ["changes", "notice", "started"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NOTICE_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[FileChange]
    notice: str
    started: WatchStarted
    def __init__(self, started: _Optional[_Union[WatchStarted, _Mapping]] = ..., changes: _Optional[_Iterable[_Union[FileChange, _Mapping]]] = ..., notice: _Optional[str] = ...) -> None: ...

class WatchStarted(_message.Message):
    __slots__ = ["directories", "path"]
    DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    directories: int
    path: str
    def __init__(self, path: _Optional[str] = ..., directories: _Optional[int] = ...) -> None: ...

class FileChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
