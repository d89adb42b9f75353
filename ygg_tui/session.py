"""The TUI's side of the socket: one `ygg_server.client.Client`, its pumps, and the questions it asks.

The session never touches widgets. It loads what a person sees (workspaces,
members, conversations, topics, balances, presence), follows every workspace
(topic and balance events), pumps deliveries and events into the app as
`Delivered` / `Evented` messages in batches, and after a reconnect subscribes
again and reloads, so that nothing is lost. Duplicates are the store's business
(every message is kept once, by id).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Callable

from ygg_server.client import Client, Refused

from .messages import ConnectionChanged, Delivered, Evented
from .state import Store, Thread

log = logging.getLogger("ygg.tui")

PAGE = 100  # messages per history page
BATCH = 500  # frames handed to the app at once


class Session:
    def __init__(self, client: Client, store: Store, post: Callable[[object], None]):
        self.client = client
        self.store = store
        self.post = post
        self.monitoring: set[str] = set()
        self._adding: dict[str, asyncio.Future] = {}  # workspace -> its load in progress (add_workspace)
        self._seen_reconnects = 0
        self.closed = False

    # --- asking ---

    async def call(self, op: str, **fields) -> dict:
        return await self.client.call(op, **fields)

    async def load(self) -> None:
        """Everything the screens need before they show anything."""
        self.store.me = dict(self.client.me or {})
        reply = await self.call("list_workspaces")
        for row in reply["workspaces"]:
            self.store.add_workspace(row)
        try:
            orgs = (await self.call("list_orgs"))["orgs"]
            self.store.org_names = {o["id"]: o["name"] for o in orgs}
            self.store.org_roles = {o["id"]: o["role"] for o in orgs}
        except Refused:  # a server without list_orgs: organizations go by their workspaces' names
            pass
        await self.load_joinable()
        await self.load_invitations()
        await self.load_my_agents()
        await asyncio.gather(*(self.load_workspace(w) for w in list(self.store.workspaces)))

    async def load_joinable(self) -> None:
        """The workspaces of one's organizations one could join by oneself (`list_joinable`)."""
        try:
            rows = (await self.call("list_joinable"))["workspaces"]
        except Refused:  # a server without list_joinable: none offered
            rows = []
        self.store.joinable = {r["id"]: r for r in rows}

    async def load_invitations(self) -> None:
        """The invitations waiting for this person's answer (`list_invitations`)."""
        try:
            rows = (await self.call("list_invitations"))["invitations"]
        except Refused:  # a server without invitations: none
            rows = []
        self.store.invitations = {r["id"]: r for r in rows}

    async def load_my_agents(self) -> None:
        """This person's own agents wherever they are (`my_agents`): what they may revoke or give a new key."""
        try:
            rows = (await self.call("my_agents"))["agents"]
        except Refused:  # a server without my_agents: the agents in the workspaces one reaches (Store.own_agents)
            return
        self.store.my_agents = {r["id"]: r for r in rows}

    async def add_workspace(self, ws: str) -> str | None:
        """A workspace this person now reaches (`workspace_added`): listed, loaded and followed; its name."""
        self.store.joinable.pop(ws, None)
        if ws in self._adding:  # asked twice at once (an op's answer and its workspace_added event): one load,
            await asyncio.shield(self._adding[ws])  # and the second caller returns once it is done
            return None
        done = self._adding[ws] = asyncio.get_running_loop().create_future()
        try:
            row = next((r for r in (await self.call("list_workspaces"))["workspaces"] if r["id"] == ws), None)
            if row is None or ws in self.store.workspaces:
                return None
            self.store.add_workspace(row)
            await self.load_workspace(ws)
            return row["name"]
        finally:
            del self._adding[ws]
            done.set_result(None)

    async def load_workspace(self, ws: str) -> None:
        members, convs, topics, paused, balances, presence, groups, _ = await asyncio.gather(
            self.call("list_members", workspace=ws),
            self.call("list_conversations", workspace=ws),
            self.call("list_topics", workspace=ws),
            self.call("list_topics", workspace=ws, status="paused"),
            self.call("balances", workspace=ws),
            self.call("presence", workspace=ws),
            self.call("list_groups", workspace=ws),
            self.call("subscribe", workspace=ws, monitor=ws in self.monitoring),
        )
        s = self.store
        s.set_members(ws, members["members"])
        s.set_conversations(ws, convs["conversations"])
        s.set_topics(paused["topics"])
        s.set_topics(topics["topics"])
        s.set_balances(ws, balances)
        s.set_presence(ws, presence["online"])
        s.set_groups(ws, groups["groups"])

    async def reload_members(self, ws: str) -> None:
        """After a management op: who is in the workspace now, with roles and permissions."""
        self.store.set_members(ws, (await self.call("list_members", workspace=ws))["members"])

    async def reload_conversations(self, ws: str) -> None:
        convs = await self.call("list_conversations", workspace=ws)
        self.store.set_conversations(ws, convs["conversations"])

    async def presence(self, ws: str) -> bool:
        reply = await self.call("presence", workspace=ws)
        return self.store.set_presence(ws, reply["online"])

    async def history(self, th: Thread, older: bool = False) -> int:
        """Fetch the newest page (or the next older one); return how many went in at the top."""
        fields = {"workspace": th.workspace, "conversation": th.conversation, "limit": PAGE}
        if th.topic:
            fields["topic"] = th.topic
        if older:
            if not th.more or th.cursor is None:
                return 0
            fields["before"] = th.cursor
        reply = await self.call("history", **fields)
        if older or not th.loaded:
            return self.store.apply_history(th, reply)
        # a refresh of the newest page (after a reconnect): keep the older cursor we had
        cursor, more = th.cursor, th.more
        added = self.store.apply_history(th, reply)
        th.cursor, th.more = cursor, more
        return added

    async def send(self, **fields) -> dict:
        """`sent` or `refused`. A send cut off by a lost connection is retried with the same
        client_id, so the server answers it once whatever happened (never stored twice)."""
        fields.setdefault("client_id", f"tui-{uuid.uuid4().hex}")
        for attempt in range(20):
            try:
                return await self.client.send(**fields)
            except (ConnectionError, AttributeError, asyncio.TimeoutError):
                await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
        return {"op": "refused", "reason": "offline", "detail": "the server could not be reached"}

    async def ack(self, ids: list[int]) -> None:
        if not ids:
            return
        try:
            await self.client.ack(ids)
        except (ConnectionError, asyncio.TimeoutError, AttributeError, Refused):
            pass  # not acked: offered again after the reconnect, and the store already counts it read

    async def fund(self, ws: str, amount: int, agent: str | None = None) -> dict:
        fields = {"workspace": ws, "amount": amount}
        if agent is None:
            fields["pool"] = True
        else:
            fields["agent"] = agent
        try:
            return await self.client.request("fund", **fields)
        except (ConnectionError, asyncio.TimeoutError, AttributeError):
            return {"op": "refused", "reason": "offline", "detail": ""}

    async def revise(self, op: str, **fields) -> dict:
        """edit_message, delete_message or message_versions: the answer, or the refusal or error as it came."""
        try:
            return await self.client.request(op, **fields)
        except (ConnectionError, asyncio.TimeoutError, AttributeError):
            return {"op": "error", "code": "offline", "detail": "the server could not be reached"}

    async def press_card(self, m: dict, action: str) -> dict:
        """A button of message `m`'s result card: the answer, or the refusal or error as it came."""
        try:
            return await self.client.request("press_card", workspace=m["workspace"], message=m["id"], action=action,
                                             topic=m.get("topic"))
        except (ConnectionError, asyncio.TimeoutError, AttributeError):
            return {"op": "error", "code": "offline", "detail": "the server could not be reached"}

    async def search(self, ws: str, query: str) -> list[dict]:
        reply = await self.call("search_messages", workspace=ws, query=query)
        return reply.get("messages", [])

    async def monitor(self, ws: str, on: bool) -> bool:
        """Follow a whole workspace (monitor permission), or go back to following its topics only."""
        if on:
            try:
                await self.call("subscribe", workspace=ws, monitor=True)
            except Refused:
                return False
            self.monitoring.add(ws)
            return True
        self.monitoring.discard(ws)
        await self.call("unsubscribe", workspace=ws)
        await self.call("subscribe", workspace=ws, monitor=False)
        return True

    async def backlog(self) -> list[dict]:
        """Deliveries already here (the server sends the unacked ones right after signing in, before
        any reply to our queries): applied before the first paint, so unread counts show at once."""
        out = []
        while self.client.pending_deliveries():
            out.append(await self.client.next_delivery())
        return out

    # --- pumps (run as workers of the app) ---

    async def pump_deliveries(self) -> None:
        c = self.client
        while not self.closed:
            batch = [await c.next_delivery()]
            while len(batch) < BATCH and c.pending_deliveries():
                batch.append(await c.next_delivery())
            self.post(Delivered(batch))

    async def pump_events(self) -> None:
        c = self.client
        queue = getattr(c, "_events", None)  # the client has no pending_events(); batch when we can see the queue
        while not self.closed:
            batch = [await c.next_event()]
            while queue is not None and len(batch) < BATCH and not queue.empty():
                batch.append(queue.get_nowait())
            self.post(Evented(batch))

    async def watch_connection(self, on_reconnect: Callable[[], object]) -> None:
        """Tell the app when the connection drops and comes back; after a reconnect, resync."""
        c = self.client
        up = c.connected.is_set()
        self._seen_reconnects = c.reconnects
        while not self.closed:
            await asyncio.sleep(0.1)
            now = c.connected.is_set()
            if now != up:
                up = now
                self.post(ConnectionChanged(now, c.reconnects))
                if now and c.reconnects != self._seen_reconnects:
                    self._seen_reconnects = c.reconnects
                    try:
                        await self.resync()
                        await _maybe_await(on_reconnect())
                    except (ConnectionError, asyncio.TimeoutError, Refused, AttributeError) as e:
                        log.info("resync failed (%s); the next reconnect tries again", e)
                        self._seen_reconnects = -1

    async def resync(self) -> None:
        """A new connection has no subscriptions and missed events: follow again, reload. A workspace that went
        or came meanwhile goes or comes as its `workspace_gone` / `workspace_added` would have had it (those
        reach only the connections open at the time)."""
        listed = {r["id"] for r in (await self.call("list_workspaces"))["workspaces"]}
        known = list(self.store.workspaces)
        missed = [{"op": "event", "kind": "workspace_gone", "workspace": w} for w in known if w not in listed]
        missed += [{"op": "event", "kind": "workspace_added", "workspace": w} for w in sorted(listed - set(known))]
        if missed:
            self.post(Evented(missed))
        await asyncio.gather(*(self.load_workspace(w) for w in known if w in listed))

    async def close(self) -> None:
        self.closed = True
        await self.client.close()


async def _maybe_await(x):
    if asyncio.iscoroutine(x):
        await x
