"""What the agent has this turn, as the server says (seed 003 §43-45, §51-52): the tools attached to it (the
registry's specs, its owner's API connections among them) and the compact list of its active skills. Read at
the start of every turn, so an owner's attach or detach shows in the next one; when the server cannot be asked,
the turn goes on with what was read last. A mixin of the Bridge."""

from __future__ import annotations

import asyncio
import logging

from ..client import Refused
from . import tools as toolbox
from .outbox import CONNECTION_ERRORS

log = logging.getLogger("ygg.agents.bridge")


class Kit:
    async def _refresh_kit(self) -> None:
        try:
            listed, skills = await asyncio.gather(self.client.call("list_tools"), self.client.call("list_skills"))
        except (Refused, asyncio.TimeoutError, *CONNECTION_ERRORS) as e:
            log.info("%s: tools and skills not read this turn (%s); using the last ones", self.name, e)
            return
        self.tools = toolbox.offered(bool(listed.get("configured")), toolbox.from_wire(listed.get("tools") or []),
                                     self.cfg.tools)
        self.skills_prompt = skills.get("prompt") or ""
