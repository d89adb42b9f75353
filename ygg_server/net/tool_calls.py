"""`call_tool`: an agent's call of a server tool, checked against the registry by the operation
(`ops.toolkit.route`: attached to this agent, its arguments valid, in a workspace of the agent's) and carried out
by the tool's handler (`tools.server_tools.run`), off the writer. A mixin of `Gateway`."""

from __future__ import annotations

from ..ops import toolkit
from ..protocol import frames, replies
from ..tools import server_tools


class ToolCalls:
    tool_env: server_tools.Env | None = None  # made on first use; tests put one with a fake web in its place
    memory_workers = None  # ops.memory_care.Workers, made by the sweeper on its first round

    async def _op_call_tool(self, conn, frame: frames.CallTool) -> dict:
        route = await self.read(toolkit.route, conn.participant, frame)
        if self.tool_env is None:
            self.tool_env = server_tools.Env(read=self.read, manage=self.manage, clock=self.clock,
                                                 oauth=self._oauth())
        if self.tool_env.send is None:  # (a test's env too: the send path and events are the gateway's)
            self.tool_env.send, self.tool_env.notify = self._tool_send, self._notify
        return replies.reply(frame, await server_tools.run(route, self.tool_env, approval=frame.approval))

    async def _tool_send(self, participant: str, frame: frames.Send) -> dict:
        """A tool's message (task_create), through the one send path as the socket's: its reply."""
        out = self.submit_send(participant, frame)
        return out if isinstance(out, dict) else replies.render(None, await out)
