"""``memstream mcp``: an MCP server (stdio) that gives an agent its memory as tools.

Tools: ``get_context``, ``add_memory``, ``recall_memories``, ``update_memory``,
``delete_memory``, ``list_memories``, ``get_profile``, ``list_entities``, ``get_entity``;
the agent's own key-value items ``put_item``, ``get_item``, ``search_items``
(docs/api.md#key-value-items); ``resolve_user`` (a string user id to memstream's).
Each is one call of the HTTP API
through ``memstream.AsyncClient`` (the API enforces keys, scopes and limits; nothing
here reads a store), built with the official MCP Python SDK
(``mcp.server.mcpserver.MCPServer``). An API error becomes a tool error whose text starts
with the API's code (``40401: memory 'm_…' not found``), which the model can read and act
on.

Settings: ``--api-url`` / ``MEMSTREAM_API_URL`` (default ``http://127.0.0.1:8000``),
``--api-key`` / ``MEMSTREAM_API_KEY``; ``--user-id`` and ``--app-id`` set the user and
app the tools act for when a call names none (an agent serving one person).

Claude Desktop and other MCP hosts start it as a command, e.g.
``{"command": "memstream", "args": ["mcp", "--user-id", "42", "--app-id", "chat"],
"env": {"MEMSTREAM_API_KEY": "msk_…"}}``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from memstream.client import DEFAULT_URL, AsyncClient
from memstream.errors import MemstreamError
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.requests import ContextTurn
from memstream.schemas.responses import (
    Context,
    Deleted,
    Entities,
    EntityDetail,
    Item,
    ItemPage,
    ItemPut,
    Profile,
    RecallResult,
    StructuredAdded,
    Updated,
    UserMemories,
)

INSTRUCTIONS = (
    "Long-term memory of the user. Call recall_memories before answering anything that "
    "may depend on what you know about the user; call add_memory to keep a durable fact, "
    "preference or instruction the user gave; update_memory or delete_memory when the "
    "user corrects or withdraws one (ids come from recall_memories or list_memories). "
    "put_item, get_item and search_items keep your own notes as JSON values under a "
    "namespace and key (a put replaces the key's value; null deletes it); "
    "get_entity tells everything known about a person, place or thing the user names "
    "(list_entities lists them). get_context gives, in one call, who the user is, the "
    "memories relevant to the current turn and the people and things it names, as one "
    "block within a budget; get_profile gives who the user is when there is no question "
    "yet."
)
UserArg = Annotated[
    int | None, Field(description="the user's id; default: the server's --user-id", ge=0)
]
AppArg = Annotated[str | None, Field(description="the app's id; default: the server's --app-id")]
NamespaceArg = Annotated[
    list[str], Field(description='labels naming a collection, e.g. ["notes"] or ["todo", "work"]')
]


def build_server(client: AsyncClient, *, user_id: int | None = None, app_id: str | None = None):
    """The MCP server over ``client``; it closes the client when it shuts down."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            await client.aclose()

    # WARNING: the SDK would log every HTTP request of the client at INFO on stderr
    server = MCPServer(
        "memstream", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )

    def user(given: int | None) -> int:
        found = given if given is not None else user_id
        if found is None:
            raise ToolError("user_id is required (the server was started without --user-id)")
        return found

    def app(given: str | None) -> str | None:
        return given if given is not None else app_id

    async def api(call: Any) -> Any:
        try:
            return await call
        except MemstreamError as exc:  # the code and message are what the model can use
            raise ToolError(str(exc)) from exc

    @server.tool()
    async def recall_memories(
        query: Annotated[str, Field(description="what you need to know, in plain words")],
        user_id: UserArg = None,
        app_id: AppArg = None,
        session_id: Annotated[str | None, Field(description="include this session's")] = None,
        top_k: Annotated[int | None, Field(ge=1, le=100)] = None,
        min_relevance: Annotated[float | None, Field(ge=0, le=1)] = None,
        max_chars: Annotated[
            int | None,
            Field(ge=1, description="your context budget: only memories that fit whole"),
        ] = None,
    ) -> RecallResult:
        """The user's memories relevant to the query, best first (``hit`` false: none)."""
        return await api(
            client.recall(
                user(user_id),
                query,
                app_id=app(app_id),
                session_id=session_id,
                top_k=top_k,
                min_relevance=min_relevance,
                max_chars=max_chars,
            )
        )

    @server.tool()
    async def add_memory(
        content: Annotated[str, Field(description="one self-contained fact, in the user's words")],
        user_id: UserArg = None,
        app_id: AppArg = None,
        level: Annotated[
            Level | None,
            Field(description="GLOBAL (every app), APP (default with an app) or SESSION"),
        ] = None,
        session_id: str | None = None,
        ownership: Annotated[
            Ownership | None, Field(description="USER: about the user; AGENT: about you")
        ] = None,
        mem_type: MemType | None = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
    ) -> StructuredAdded:
        """Store one memory now (durable when this returns; the same text twice is one)."""
        return await api(
            client.add_structured(
                user(user_id),
                content,
                app_id=app(app_id),
                level=level,
                session_id=session_id,
                ownership=ownership,
                mem_type=mem_type,
                is_important=is_important,
                expire_at=expire_at,
            )
        )

    @server.tool()
    async def update_memory(
        memory_id: str,
        content: Annotated[str | None, Field(description="the corrected text")] = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
        user_id: UserArg = None,
    ) -> Updated:
        """Correct a memory's text or mark it important; give at least one change."""
        return await api(
            client.update(
                user(user_id),
                memory_id,
                content=content,
                is_important=is_important,
                expire_at=expire_at,
            )
        )

    @server.tool()
    async def delete_memory(memory_id: str, user_id: UserArg = None) -> Deleted:
        """Forget a memory (gone from recall at once)."""
        return await api(client.delete(user(user_id), memory_id))

    @server.tool()
    async def list_memories(
        user_id: UserArg = None,
        include_deleted: bool = False,
        page: Annotated[int, Field(ge=1)] = 1,
        page_size: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> UserMemories:
        """Every memory of the user (superseded ones too), grouped by scope, oldest first."""
        return await api(
            client.user_list(
                user(user_id), include_deleted=include_deleted, page=page, page_size=page_size
            )
        )

    @server.tool()
    async def list_entities(
        user_id: UserArg = None,
        app_id: AppArg = None,
        type: Annotated[
            str | None, Field(description="only this type: person, place, organization, ...")
        ] = None,
        page: Annotated[int, Field(ge=1)] = 1,
        page_size: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> Entities:
        """The people, places and things the user's memories name, most memories first,
        with their other names and when they were last mentioned."""
        return await api(
            client.entities(
                user(user_id), app_id=app(app_id), type=type, page=page, page_size=page_size
            )
        )

    @server.tool()
    async def get_entity(
        name: Annotated[
            str | None, Field(description="the entity's name or another name of it, any case")
        ] = None,
        entity_id: Annotated[str | None, Field(description="its id, from list_entities")] = None,
        user_id: UserArg = None,
        app_id: AppArg = None,
        max_chars: Annotated[int | None, Field(ge=1, description="the summary's budget")] = None,
    ) -> EntityDetail:
        """Everything known about one entity (give name or entity_id): a summary of what is
        true now and every memory naming it in time order, superseded ones included with
        when they stopped being true. A name two entities share lists both."""
        return await api(
            client.entity(
                user(user_id),
                entity_id=entity_id,
                name=name,
                app_id=app(app_id),
                max_chars=max_chars,
            )
        )

    @server.tool()
    async def get_context(
        query: Annotated[
            str | None, Field(description="what the turn is about; else give messages")
        ] = None,
        messages: Annotated[
            list[ContextTurn] | None,
            Field(description="the conversation's last turns ({role, content})", max_length=50),
        ] = None,
        user_id: UserArg = None,
        app_id: AppArg = None,
        max_chars: Annotated[
            int | None, Field(ge=1, le=20_000, description="the whole text's budget")
        ] = None,
    ) -> Context:
        """The context for the turn at hand in one block (``text``) to read before
        answering: who the user is, the memories relevant to ``query`` (else to the last
        user turns of ``messages``) and the people and things they name, each line
        citing its memories (``items``). Neither query nor messages: who the user is."""
        turns = None if messages is None else [t.model_dump(mode="json") for t in messages]
        return await api(
            client.context(
                user(user_id),
                query=query,
                messages=turns,
                app_id=app(app_id),
                max_chars=max_chars,
            )
        )

    @server.tool()
    async def get_profile(
        user_id: UserArg = None,
        app_id: AppArg = None,
        entity: Annotated[
            str | None, Field(description="only what the memories say about this entity")
        ] = None,
        max_chars: Annotated[int | None, Field(ge=1, le=20_000)] = None,
    ) -> Profile:
        """Who the user is and what matters to them now, for a session's start: short
        statements, most telling first, each citing the memories it states."""
        return await api(
            client.profile(user(user_id), app_id=app(app_id), entity=entity, max_chars=max_chars)
        )

    @server.tool()
    async def put_item(
        namespace: NamespaceArg,
        key: Annotated[str, Field(description="the item's key within the namespace")],
        value: Annotated[
            dict[str, Any] | None,
            Field(description="a JSON object, kept and returned as given; null deletes the item"),
        ],
        user_id: UserArg = None,
        app_id: AppArg = None,
        session_id: str | None = None,
    ) -> ItemPut:
        """Keep (or replace, or with null delete) one of your own notes; durable when this
        returns. Found again by get_item (its key) or search_items (its meaning)."""
        return await api(
            client.put_item(
                user(user_id),
                namespace,
                key,
                value,
                app_id=app(app_id),
                session_id=session_id,
            )
        )

    @server.tool()
    async def get_item(
        namespace: NamespaceArg,
        key: str,
        user_id: UserArg = None,
        app_id: AppArg = None,
        session_id: str | None = None,
    ) -> Item:
        """The item at this key (a tool error 40401 when there is none)."""
        found = await api(
            client.get_item(
                user(user_id), namespace, key, app_id=app(app_id), session_id=session_id
            )
        )
        if found is None:
            raise ToolError(f"40401: no item '{key}' in namespace {namespace}")
        return found

    @server.tool()
    async def search_items(
        namespace_prefix: Annotated[
            list[str], Field(description="the namespace or its first labels; [] for all")
        ] = [],  # noqa: B006 (the SDK copies defaults into the schema; never mutated)
        query: Annotated[str | None, Field(description="rank by meaning")] = None,
        filter: Annotated[
            dict[str, Any] | None,
            Field(
                description='value fields that must match: {"status": "open"} or {"n": {"$gt": 2}}'
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 10,
        user_id: UserArg = None,
        app_id: AppArg = None,
        session_id: str | None = None,
    ) -> ItemPage:
        """Your items under a namespace prefix, by relevance to the query (else newest first)."""
        return await api(
            client.search_items(
                user(user_id),
                namespace_prefix,
                app_id=app(app_id),
                session_id=session_id,
                query=query,
                filter=filter,
                limit=limit,
            )
        )

    @server.tool()
    async def resolve_user(
        external_id: Annotated[
            str, Field(description="the user's id in your system (a name, an email, a UUID)")
        ],
        create: Annotated[bool, Field(description="false: only look it up")] = True,
    ) -> int:
        """memstream's numeric user id for a string user id, created on first use; pass it
        as user_id to the other tools."""
        return await api(client.resolve_user(external_id, create=create))

    return server


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api-url",
        default=os.environ.get("MEMSTREAM_API_URL") or DEFAULT_URL,
        help="the memstream API (env MEMSTREAM_API_URL; default %(default)s)",
    )
    p.add_argument(
        "--api-key",
        default=os.environ.get("MEMSTREAM_API_KEY") or None,
        help="its API key (env MEMSTREAM_API_KEY; better there than on a command line)",
    )
    p.add_argument("--user-id", type=_user_id, default=None, help="the default user of the tools")
    p.add_argument("--app-id", default=None, help="the default app of the tools")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per API call")


def _user_id(text: str) -> int:
    if not text.isdigit() or int(text) >= 2**64:
        raise argparse.ArgumentTypeError(f"a user id is an integer 0..2^64-1, not {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout until the host closes it."""
    if not args.api_url.startswith(("http://", "https://")):
        print(
            f"memstream mcp: --api-url must be http(s)://..., not {args.api_url!r}", file=sys.stderr
        )
        return 2
    client = AsyncClient(
        args.api_url,
        args.api_key,
        timeout=args.timeout,
        verify=os.environ.get("MEMSTREAM_API_TLS_CA_FILE") or True,
    )
    build_server(client, user_id=args.user_id, app_id=args.app_id).run("stdio")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="memstream mcp", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
