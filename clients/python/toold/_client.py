"""The asyncio client: Client (one channel) and Session (one ExecuteTool stream)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Union

import grpc
from google.protobuf import duration_pb2

from . import errors
from ._types import (
    ApprovalRequest,
    Decision,
    Event,
    InputRequest,
    Result,
    _enum_name,
    approval_from_pb,
)
from ._textcalls import ParsedText, parsed_from_pb, text_format
from .v1 import (
    checkpoint_pb2,
    checkpoint_pb2_grpc,
    textcalls_pb2,
    textcalls_pb2_grpc,
    tool_pb2,
    tool_pb2_grpc,
    workspace_pb2,
    workspace_pb2_grpc,
)

log = logging.getLogger("toold")

#: ListTools formats by name.
FORMATS = {
    "toold": tool_pb2.TOOL_FORMAT_UNSPECIFIED,
    "openai": tool_pb2.TOOL_FORMAT_OPENAI,
    "anthropic": tool_pb2.TOOL_FORMAT_ANTHROPIC,
    "gemini": tool_pb2.TOOL_FORMAT_GEMINI,
    "mcp": tool_pb2.TOOL_FORMAT_MCP,
}

#: Approval modes by name.
MODES = {
    "yolo": tool_pb2.APPROVAL_MODE_YOLO,
    "auto": tool_pb2.APPROVAL_MODE_AUTO,
    "ask": tool_pb2.APPROVAL_MODE_ASK,
}

ApprovalHandler = Callable[[ApprovalRequest], Union[bool, Decision, Awaitable[Union[bool, Decision]]]]
InputHandler = Callable[[InputRequest], Union[str, Awaitable[str]]]
Arguments = Union[None, str, bytes, Dict[str, Any]]
Timeout = Union[None, float, int, timedelta]


def _grpc_target(socket: Optional[str], address: Optional[str]) -> str:
    if socket and address:
        raise ValueError("give socket or address, not both")
    if address:
        return address
    path = socket or os.environ.get("TOOLD_SOCKET") or "./toold.sock"
    return "unix:" + os.path.abspath(path)


def _duration(t: Timeout) -> Optional[duration_pb2.Duration]:
    if t is None:
        return None
    if isinstance(t, timedelta):
        t = t.total_seconds()
    if t <= 0:
        raise ValueError("timeout must be positive")
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(t * 1e9))
    return d


def _stream_error(err: BaseException) -> errors.StreamError:
    if isinstance(err, errors.StreamError):
        return err
    if isinstance(err, grpc.aio.AioRpcError):
        return errors.StreamError(
            f"toold stream failed: {err.code().name}: {err.details()}", err.code().name
        )
    return errors.StreamError(f"toold stream failed: {err!r}")


#: WorkspaceService file change kinds by enum value.
_CHANGE_KINDS = {
    workspace_pb2.FILE_CHANGE_KIND_CREATED: "created",
    workspace_pb2.FILE_CHANGE_KIND_CHANGED: "changed",
    workspace_pb2.FILE_CHANGE_KIND_REMOVED: "removed",
}


@dataclass(frozen=True)
class FileChange:
    """One path's change in a watch window: ``kind`` is "created", "changed" or "removed"."""

    path: str
    kind: str
    directory: bool = False


@dataclass(frozen=True)
class WatchBatch:
    """What a watch reports: the start (``started``), or one window's changes.

    ``notice`` says what was not reported (directories beyond the cap, a
    queue overflow) or why the watch ends.
    """

    changes: List[FileChange]
    started: bool = False
    path: str = ""
    directories: int = 0
    notice: str = ""


@dataclass(frozen=True)
class ToolList:
    """ListTools' answer: every tool in a stable order, and the provider rendering."""

    #: ToolSpec messages, built-ins first.
    tools: List[Any]
    #: The rendering for the requested format, as JSON text ("" for none).
    rendered_json: str
    #: With a dialect: its name and the published definition it follows.
    dialect: str = ""
    dialect_version: str = ""
    #: UnavailableTool messages: tools not offered here (with a dialect, the
    #: agent's tools toold has no counterpart for), each with its reason.
    unavailable: List[Any] = field(default_factory=list)

    @property
    def rendered(self) -> List[Dict[str, Any]]:
        """The rendering decoded: the list a provider's "tools" parameter takes."""
        return json.loads(self.rendered_json) if self.rendered_json else []

    @property
    def names(self) -> List[str]:
        return [t.name for t in self.tools]


class Client:
    """A connection to toold over its unix socket (default) or TCP.

    ``socket`` defaults to $TOOLD_SOCKET, then ./toold.sock; ``address`` is
    "host:port" for TCP; ``token`` defaults to $TOOLD_TOKEN and is sent as a
    bearer token. The channel opens on first use inside the running event
    loop; ``close()`` (or ``async with``) closes it and every session on it.
    """

    def __init__(
        self,
        socket: Optional[str] = None,
        address: Optional[str] = None,
        token: Optional[str] = None,
        *,
        client_name: str = "toold-python/0.1",
    ) -> None:
        self._target = _grpc_target(socket, address)
        tok = token if token is not None else os.environ.get("TOOLD_TOKEN", "")
        self._metadata = (("authorization", "bearer " + tok),) if tok else ()
        self._client_name = client_name
        self._channel: Optional[grpc.aio.Channel] = None
        self._stub: Optional[tool_pb2_grpc.ToolServiceStub] = None
        self._sessions: "set[Session]" = set()

    def _tool_stub(self) -> tool_pb2_grpc.ToolServiceStub:
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self._target)
            self._stub = tool_pb2_grpc.ToolServiceStub(self._channel)
        return self._stub

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes every session of this client, then the channel."""
        for s in list(self._sessions):
            await s.close()
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._stub = None

    async def list_tools(
        self,
        format: Union[str, int, None] = None,
        *,
        flat_operations: bool = False,
        strict: bool = False,
        dialect: str = "",
        timeout: float = 30,
    ) -> ToolList:
        """Lists the tools; ``format`` ("openai", "anthropic", "gemini", "mcp") adds a rendering.

        ``flat_operations`` also renders every operation as its own tool;
        ``strict`` (with "openai") renders for OpenAI's strict mode.
        ``dialect`` ("claude-code", "gemini-cli", "codex", "openhands",
        "swe-agent") lists that agent's tools by its names and schemas instead
        of toold's, each run by toold's tools (open the session with the same
        ``dialect`` to call them); an unknown one raises StreamError (INVALID_ARGUMENT).
        """
        if isinstance(format, str):
            try:
                fmt = FORMATS[format.lower()]
            except KeyError:
                raise ValueError(f"unknown format {format!r}; one of {', '.join(FORMATS)}") from None
        else:
            fmt = format or tool_pb2.TOOL_FORMAT_UNSPECIFIED
        try:
            resp = await self._tool_stub().ListTools(
                tool_pb2.ListToolsRequest(format=fmt, flat_operations=flat_operations, strict=strict, dialect=dialect),
                metadata=self._metadata,
                timeout=timeout,
            )
        except grpc.aio.AioRpcError as e:
            raise _stream_error(e) from None
        return ToolList(list(resp.tools), resp.rendered_json, resp.dialect, resp.dialect_version, list(resp.unavailable))

    async def parse_tool_calls(self, text: str, format: Optional[str] = None, *, timeout: float = 30) -> ParsedText:
        """Finds the tool calls a model wrote as text and checks each as toold would run it.

        ``format`` is "hermes" (or "qwen"), "llama3", "mistral", "deepseek",
        "tool_code" (or "gemma"), "json" or "legacy"; None detects it.
        Nothing runs: send a call's ``name`` and ``arguments`` on a session.
        """
        fmt = text_format(format)
        self._tool_stub()
        try:
            resp = await textcalls_pb2_grpc.TextCallServiceStub(self._channel).ParseToolCalls(
                textcalls_pb2.ParseToolCallsRequest(text=text, format=fmt), metadata=self._metadata, timeout=timeout
            )
        except grpc.aio.AioRpcError as e:
            raise _stream_error(e) from None
        return parsed_from_pb(resp)

    async def tool_prompt(self, format: str, *, flat: bool = False, timeout: float = 30) -> str:
        """The tools as the system-prompt block of a text format ("hermes", "llama3", ...)."""
        fmt = text_format(format)
        if fmt == textcalls_pb2.TEXT_CALL_FORMAT_UNSPECIFIED:
            raise ValueError("name the format to render the tool prompt for")
        self._tool_stub()
        try:
            resp = await textcalls_pb2_grpc.TextCallServiceStub(self._channel).RenderToolPrompt(
                textcalls_pb2.RenderToolPromptRequest(format=fmt, flat=flat), metadata=self._metadata, timeout=timeout
            )
        except grpc.aio.AioRpcError as e:
            raise _stream_error(e) from None
        return resp.prompt

    def session(
        self,
        conversation_id: str = "",
        mode: Optional[str] = None,
        on_approval: Optional[ApprovalHandler] = None,
        on_input: Optional[InputHandler] = None,
        *,
        omit_executing: bool = False,
        dialect: str = "",
    ) -> "Session":
        """A conversation: one ExecuteTool stream that every call shares.

        ``mode`` ("yolo", "auto", "ask") may only make the server's mode
        stricter. ``on_approval`` answers RequiresApproval (return True,
        False, or a Decision; sync or async); without one every ask is
        denied. ``on_input`` answers a tool's question with a string.
        ``dialect`` ("claude-code", "codex", ...) makes the session's calls
        use that agent's tool names and arguments, with results in the shape
        its model expects (see ``list_tools(dialect=...)``).
        The stream opens on first use or with ``async with``.
        """
        s = Session(self, conversation_id, mode, on_approval, on_input, omit_executing, dialect)
        self._sessions.add(s)
        return s


@dataclass
class _Call:
    name: str
    arguments: Any
    events: "asyncio.Queue[Union[Event, BaseException]]" = field(default_factory=asyncio.Queue)
    ended: bool = False
    #: Approval and input handlers still running for this call; canceled when it ends.
    handlers: "set[asyncio.Task]" = field(default_factory=set)

    def finish(self) -> None:
        self.ended = True
        for t in self.handlers:
            t.cancel()


_CLOSE = object()


class Session:
    """One ExecuteTool stream: many concurrent calls, approvals in-band.

    Canceling a task awaiting ``call`` (or leaving ``events`` early) sends
    Cancel for that call. If the stream fails (the daemon went away), every
    waiting call raises StreamError and the session stays failed.
    """

    def __init__(self, client, conversation_id, mode, on_approval, on_input, omit_executing, dialect="") -> None:
        if mode is not None and mode.lower() not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        self._client = client
        self._hello = tool_pb2.Hello(
            conversation_id=conversation_id,
            approval_mode=MODES[mode.lower()] if mode else tool_pb2.APPROVAL_MODE_UNSPECIFIED,
            client_name=client._client_name,
            omit_executing=omit_executing,
            dialect=dialect,
        )
        self._on_approval = on_approval
        self._on_input = on_input
        self._calls: Dict[str, _Call] = {}
        self._outbox: "asyncio.Queue[Any]" = asyncio.Queue()
        self._rpc = None
        self._reader: Optional[asyncio.Task] = None
        self._writer: Optional[asyncio.Task] = None
        self._handlers: "set[asyncio.Task]" = set()
        self._welcome: Optional[asyncio.Future] = None
        self._error: Optional[errors.StreamError] = None
        self._closed = False
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]
        self._open_lock = asyncio.Lock()

    # --- the Welcome, surfaced ----------------------------------------------

    @property
    def welcome(self):
        """The Welcome message (every field toold sends, including newer ones)."""
        if self._welcome is None or not self._welcome.done() or self._welcome.exception():
            raise errors.TooldError("the session is not open: call open() or use async with")
        return self._welcome.result()

    @property
    def conversation_id(self) -> str:
        return self.welcome.conversation_id

    @property
    def approval_mode(self) -> str:
        return _enum_name(tool_pb2.ApprovalMode, self.welcome.approval_mode, "APPROVAL_MODE_")

    @property
    def server_version(self) -> str:
        return self.welcome.server_version

    @property
    def workspace(self) -> str:
        return self.welcome.workspace

    # --- lifecycle ----------------------------------------------------------

    async def __aenter__(self) -> "Session":
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def open(self):
        """Opens the stream (once) and returns the Welcome."""
        async with self._open_lock:
            if self._closed:
                raise errors.TooldError("the session is closed")
            if self._welcome is None:
                loop = asyncio.get_running_loop()
                self._welcome = loop.create_future()
                self._outbox.put_nowait(tool_pb2.ClientMessage(hello=self._hello))
                self._rpc = self._client._tool_stub().ExecuteTool(metadata=self._client._metadata)
                self._writer = loop.create_task(self._write())
                self._reader = loop.create_task(self._read())
        return await asyncio.shield(self._welcome)

    async def close(self) -> None:
        """Cancels calls still running, ends the stream and waits for it to end."""
        if self._closed:
            return
        self._closed = True
        self._client._sessions.discard(self)
        for cid, c in list(self._calls.items()):
            if not c.ended:
                self._send(tool_pb2.ClientMessage(cancel=tool_pb2.Cancel(call_id=cid, reason="session closed")))
        self._outbox.put_nowait(_CLOSE)
        for t in list(self._handlers):
            t.cancel()
        if self._reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._reader), 10)
            except (asyncio.TimeoutError, Exception):
                pass
            if not self._reader.done():
                self._rpc.cancel()
                await asyncio.gather(self._reader, return_exceptions=True)
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _write(self) -> None:
        # The only task that writes on the stream, fed by the outbox.
        try:
            while True:
                m = await self._outbox.get()
                if m is _CLOSE:
                    await self._rpc.done_writing()
                    return
                await self._rpc.write(m)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
            return  # the stream ended; the reader reports why

    def _send(self, m) -> None:
        if self._error is None:
            self._outbox.put_nowait(m)

    async def _read(self) -> None:
        err: BaseException = errors.StreamError("toold ended the stream", "OK")
        try:
            while True:
                ev = await self._rpc.read()
                if ev is grpc.aio.EOF:
                    break
                self._dispatch(ev)
        except asyncio.CancelledError:
            err = errors.StreamError("the session was closed", "CANCELLED")
        except BaseException as e:  # the daemon went away, a bad token...
            err = _stream_error(e)
        self._error = err
        self._writer.cancel()
        if not self._welcome.done():
            self._welcome.set_exception(err)
            self._welcome.exception()  # retrieved: open() re-raises it
        for c in self._calls.values():
            if not c.ended:
                c.finish()
                c.events.put_nowait(err)

    def _dispatch(self, ev) -> None:
        kind = ev.WhichOneof("event")
        if kind == "welcome":
            if not self._welcome.done():
                self._welcome.set_result(ev.welcome)
            return
        if kind == "keepalive" or kind is None:
            return
        c = self._calls.get(ev.call_id)
        if c is None:
            if kind == "rejected":
                log.warning("toold rejected a message: %s", ev.rejected.message)
            return
        event = Event(kind, ev.call_id, ev.seq, ev)
        if kind == "end":
            event = Event(kind, ev.call_id, ev.seq, ev, Result.from_pb(ev.call_id, ev.end.result))
            c.finish()
            del self._calls[ev.call_id]
        elif kind == "requires_approval":
            req = approval_from_pb(ev.call_id, c.name, c.arguments, ev.requires_approval)
            self._spawn(c, self._answer_approval(req))
        elif kind == "input_required":
            r = ev.input_required
            req = InputRequest(ev.call_id, r.request_id, r.prompt, list(r.choices), r.approval, r.authorize_operation, r)
            self._spawn(c, self._answer_input(req))
        c.events.put_nowait(event)

    def _spawn(self, c: _Call, coro) -> None:
        # A handler may wait for a person; it is canceled when its call ends
        # (canceled, timed out, the stream gone), so nobody is asked in vain.
        t = asyncio.get_running_loop().create_task(coro)
        self._handlers.add(t)
        c.handlers.add(t)
        t.add_done_callback(self._handlers.discard)
        t.add_done_callback(c.handlers.discard)

    async def _answer_approval(self, req: ApprovalRequest) -> None:
        if self._on_approval is None:
            d = Decision.deny("this client has no approval handler")
        else:
            try:
                d = self._on_approval(req)
                if inspect.isawaitable(d):
                    d = await d
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("approval handler failed")
                d = Decision.deny(f"the approval handler failed: {e}")
        if isinstance(d, bool):
            d = Decision(d)
        if not isinstance(d, Decision):
            d = Decision.deny(f"the approval handler returned {type(d).__name__}, not bool or Decision")
        msg = tool_pb2.ApprovalDecision(
            approval_id=req.approval_id, approve=d.approve, scope_id=d.scope_id, reason=d.reason
        )
        if d.ttl is not None:
            msg.ttl.CopyFrom(_duration(d.ttl))
        self._send(tool_pb2.ClientMessage(approval=msg))

    async def _answer_input(self, req: InputRequest) -> None:
        text = ""
        if self._on_input is not None:
            try:
                a = self._on_input(req)
                text = (await a) if inspect.isawaitable(a) else a
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("input handler failed")
                text = ""
        self._send(
            tool_pb2.ClientMessage(
                input=tool_pb2.Input(call_id=req.call_id, request_id=req.request_id, text=str(text or ""))
            )
        )

    # --- calls --------------------------------------------------------------

    async def _start(self, name: str, args: Arguments, timeout: Timeout, call_id: Optional[str]) -> str:
        await self.open()
        if self._error is not None:
            raise self._error
        if self._closed:
            raise errors.TooldError("the session is closed")
        cid = call_id or f"{self._prefix}-{next(self._ids)}"
        if cid in self._calls:
            raise ValueError(f"call_id {cid!r} is in use on this session")
        call = tool_pb2.ToolCall(call_id=cid, name=name)
        if isinstance(args, bytes):
            args = args.decode()
        if isinstance(args, str):
            call.arguments_json = args  # the model's text, verbatim
        elif args is not None:
            call.arguments_json = json.dumps(args)
        d = _duration(timeout)
        if d is not None:
            call.timeout.CopyFrom(d)
        self._calls[cid] = _Call(name, args)
        self._send(tool_pb2.ClientMessage(call=call))
        return cid

    async def events(
        self, name: str, args: Arguments = None, *, timeout: Timeout = None, call_id: Optional[str] = None
    ) -> AsyncIterator[Event]:
        """Starts a call and yields its events, ending with the "end" event.

        Leaving the loop early (or canceling the task) cancels the call.
        Approvals and questions go to the session's handlers; their events
        are yielded too.
        """
        cid = await self._start(name, args, timeout, call_id)
        c = self._calls[cid]
        try:
            while True:
                item = await c.events.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.kind == "end":
                    return
        finally:
            if not c.ended and self._error is None:
                c.finish()
                self._calls.pop(cid, None)
                self._send(tool_pb2.ClientMessage(cancel=tool_pb2.Cancel(call_id=cid, reason="client canceled")))

    async def watch(
        self, path: str = "", *, recursive: bool = True, coalesce: float = 0.1, max_directories: int = 0
    ) -> AsyncIterator[WatchBatch]:
        """Watches a workspace directory (default the workspace) as this conversation.

        Yields a WatchBatch with ``started`` set once the watch is in place,
        then one per window of ``coalesce`` seconds in which files changed
        (merged per path; what .gitignore ignores is left out). Leaving the
        loop ends the watch. It is judged like reading the directory: a path
        outside the workspace, or one the policy does not allow, raises
        StreamError (PERMISSION_DENIED). The iteration ends when toold
        stops or the directory is removed.
        """
        await self.open()
        w = self.welcome
        stub = workspace_pb2_grpc.WorkspaceServiceStub(self._client._channel)
        md = self._client._metadata + (("toold-conversation-secret", w.conversation_secret),)
        req = workspace_pb2.WatchRequest(
            path=path, recursive=recursive, conversation_id=w.conversation_id,
            coalesce_ms=int(coalesce * 1000), max_directories=max_directories,
        )
        rpc = stub.Watch(req, metadata=md)
        try:
            async for r in rpc:
                changes = [FileChange(c.path, _CHANGE_KINDS.get(c.kind, "unknown"), c.directory) for c in r.changes]
                yield WatchBatch(
                    changes=changes, started=r.HasField("started"), path=r.started.path,
                    directories=r.started.directories, notice=r.notice,
                )
        except grpc.aio.AioRpcError as e:
            raise _stream_error(e) from None
        finally:
            rpc.cancel()

    async def call(
        self,
        name: str,
        args: Arguments = None,
        *,
        timeout: Timeout = None,
        call_id: Optional[str] = None,
        check: bool = False,
    ) -> Result:
        """Runs one call and returns its Result.

        ``args`` is the model's JSON text (sent verbatim) or a dict. A failed
        call is a Result with ``error`` set; ``check=True`` raises its
        ToolCallError subclass instead. Canceling the awaiting task sends
        Cancel. The stream failing raises StreamError.
        """
        gen = self.events(name, args, timeout=timeout, call_id=call_id)
        try:
            async for ev in gen:
                if ev.kind == "end":
                    return ev.result.raise_for_error() if check else ev.result
        finally:
            await gen.aclose()
        raise errors.StreamError("the call ended without a result")  # not reached

    # --- checkpoints: what calls changed, and rewind --------------------------

    def _secret_metadata(self):
        return self._client._metadata + (("toold-conversation-secret", self.welcome.conversation_secret),)

    async def changes(self, call_id: Optional[str] = None, *, diff: bool = False, timeout: float = 30) -> List[Any]:
        """What this conversation's calls changed in the workspace, oldest first.

        Returns CallChanges messages (call_id, changes: path, before, after,
        and with ``diff=True`` a unified diff of each text file): every
        recorded call's, or only ``call_id``'s. Calls that cannot change the
        workspace have no record. Raises TooldError when toold has no record
        of ``call_id`` or keeps no checkpoints.
        """
        await self.open()
        try:
            resp = await checkpoint_pb2_grpc.CheckpointServiceStub(self._client._channel).Changes(
                checkpoint_pb2.ChangesRequest(conversation_id=self.conversation_id, call_id=call_id or "", diff=diff),
                metadata=self._secret_metadata(),
                timeout=timeout,
            )
        except grpc.aio.AioRpcError as e:
            raise errors.TooldError(f"changes: {e.code().name}: {e.details()}") from e
        return list(resp.calls)

    async def rewind(self, call_id: str, *, dry_run: bool = False, force: bool = False, timeout: float = 60):
        """Rewinds the workspace to before ``call_id``: that call and this
        conversation's later calls are undone, newest first.

        Returns the RewindResponse: undone_call_ids, actions (path, op,
        conflict, error, done) and conflicts. A path changed since by
        anything outside the conversation is a conflict, left alone unless
        ``force=True``; ``dry_run=True`` changes nothing. Raises TooldError
        when toold has no record of the call (or it was dropped to keep
        within the store's bounds), while a call of the conversation runs,
        or when toold keeps no checkpoints.
        """
        await self.open()
        try:
            return await checkpoint_pb2_grpc.CheckpointServiceStub(self._client._channel).Rewind(
                checkpoint_pb2.RewindRequest(conversation_id=self.conversation_id, call_id=call_id, dry_run=dry_run, force=force),
                metadata=self._secret_metadata(),
                timeout=timeout,
            )
        except grpc.aio.AioRpcError as e:
            raise errors.TooldError(f"rewind: {e.code().name}: {e.details()}") from e
