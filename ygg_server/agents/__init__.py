"""The agent bridge: model backends behind one interface, directives, personas, built-in offline agents.

- `Bridge(config)` runs one agent over the socket (`ygg-agent run`); `Supervisor` starts several.
- `backends.make(config)` builds its backend: builtin, anthropic, openai, claude-cli, codex-cli.
- `directives.compute(...)` splits what the agent is told into a stable and a dynamic part.
- `start_demo(url, data_dir=…, workspace=…, owner=…)` creates and runs the offline demo team.

See docs/agents.md.
"""

from .bridge import Bridge, Supervisor
from .config import AgentConfig, BackendConfig
from .demo import DEMO_AGENTS, Demo, start_demo
from .types import Directive, Tool, ToolCall, ToolResult, TurnInput, TurnOutput

__all__ = [
    "Bridge", "Supervisor", "AgentConfig", "BackendConfig", "DEMO_AGENTS", "Demo", "start_demo",
    "Directive", "Tool", "ToolCall", "ToolResult", "TurnInput", "TurnOutput",
]
