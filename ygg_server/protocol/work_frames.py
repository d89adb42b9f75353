"""Client frames of the work around messages (issues 21 to 24): artifacts and side threads, reminders, routines
and approvals, tools, skills and memory, hosts and the agent directory. Part of the one tagged union
(`frames.ClientFrame`); read frames.py's docstring for how fields are typed."""

from __future__ import annotations

from typing import Any

from .frame_base import Frame, InWorkspace, ShortText

# --- artifacts (core/artifacts.py): each a message through the writer ---

class CreateArtifact(InWorkspace, tag="create_artifact"):
    conversation: str = "general"
    topic: str | None = None  # where its message goes: a topic id, or "new" (with `topic_title`)
    topic_title: Any = None
    title: Any = None
    kind: Any = "document"
    language: Any = None
    body: Any = None
    to: Any = None


class UpdateArtifact(InWorkspace, tag="update_artifact"):
    artifact: ShortText
    topic: str | None = None
    topic_title: Any = None
    body: Any = None
    title: Any = None  # left out: the title stays
    to: Any = None


class CommentArtifact(InWorkspace, tag="comment_artifact"):
    artifact: ShortText
    version: Any = None  # left out: the latest
    topic: str | None = None
    topic_title: Any = None
    text: Any = None
    to: Any = None


class GetArtifact(InWorkspace, tag="get_artifact"):
    artifact: ShortText
    version: Any = None  # left out: the latest


class WorkGraph(InWorkspace, tag="work_graph"):  # seed 003 §49 (ops/graph.py): read-only
    agent: Any = None  # a participant, as a send names one; left out: everyone
    state: Any = None  # ops.graph.STATES; left out: every state


class ListArtifacts(InWorkspace, tag="list_artifacts"):
    conversation: Any = None  # left out: every conversation the asker reads


class ArtifactDiff(InWorkspace, tag="artifact_diff"):
    artifact: ShortText
    old: Any = None  # versions (whole numbers); left out: the one before `new`, and the latest
    new: Any = None


class SettleThread(InWorkspace, tag="settle_thread"):
    """A side thread marked resolved, abandoned or ongoing again, with a summary posted back (seed 003 §7)."""

    thread: ShortText
    state: Any = "resolved"  # judged by the op: `bad_thread_state`
    summary: str | None = None


class PressCard(InWorkspace, tag="press_card"):
    """A button pressed on a message's result card (seed 003 §13; core/cards.py): acted on in place (an email
    draft's send, save_draft) or handed back to the card's author as a request. `topic`: the card's topic, where
    the request goes (left out, or not the card's: the request opens a new topic)."""

    message: ShortText
    action: Any = None  # judged by the op: `unknown_action`
    topic: ShortText | None = None


# --- reminders and routines (issue 22; ops/schedules.py) ---

class ListSchedules(InWorkspace, tag="list_schedules"):
    pass


class AddReminder(InWorkspace, tag="add_reminder"):
    at: Any = None  # when, in microseconds since the epoch (UTC)
    text: Any = None
    agent: Any = None  # a person's reminder: the agent that delivers it (an agent's: itself)
    person: Any = None  # an agent's reminder: the person reminded (default: its owner)


class AddRoutine(InWorkspace, tag="add_routine"):
    agent: Any = None
    text: Any = None  # the standing instruction
    name: Any = ""
    cron: Any = None  # a cron schedule ("0 8 * * 1-5"), or
    every: Any = None  # every so many seconds
    tz: Any = "UTC"


class PauseSchedule(InWorkspace, tag="pause_schedule"):
    id: Any = None
    paused: bool = True


class DeleteSchedule(InWorkspace, tag="delete_schedule"):
    id: Any = None


class AllowRoutines(Frame, tag="allow_routines"):
    agent: Any = None
    allow: bool = True


# --- approvals (issue 22; ops/approvals.py) ---

class RequestApproval(InWorkspace, tag="request_approval"):
    tool: Any = None
    arg: Any = ""


class GetApproval(InWorkspace, tag="get_approval"):
    id: Any = None


class ListApprovals(InWorkspace, tag="list_approvals"):
    pass


class DecideApproval(InWorkspace, tag="decide_approval"):
    id: Any = None
    answer: Any = None  # approve, deny, always_allow, always_deny


class SetToolRule(InWorkspace, tag="set_tool_rule"):
    agent: Any = "*"
    rule: Any = None  # Tool or Tool(specifier)
    effect: Any = None  # deny, ask, allow; null removes the rule


class ListToolRules(InWorkspace, tag="list_tool_rules"):
    pass


# --- loops and pulses (issue 22; ops/goals.py, core/goals.py); paused and deleted as schedules ---

class AddLoop(InWorkspace, tag="add_loop"):
    agent: Any = None
    goal: Any = None
    name: Any = ""
    every: Any = None  # seconds between iterations (none: continuous)
    max_iterations: Any = None  # the safeguards (left out: core/goals.py's defaults)
    budget: Any = None  # credits
    hours: Any = None  # the deadline, hours from now
    stall_after: Any = None  # no progress: the same report or result this many iterations in a row


class AddPulse(InWorkspace, tag="add_pulse"):
    agent: Any = None
    checklist: Any = None
    name: Any = ""
    every: Any = None  # seconds


class LoopVerdict(InWorkspace, tag="loop_verdict"):
    loop: Any = None  # left out: the asking agent's one loop waiting for a verdict here
    iteration: Any = None  # left out: the one waiting
    verdict: Any = None  # continue, done, stuck
    report: Any = None
    result: Any = None  # what the iteration produced (compared for progress)


class PulseReport(InWorkspace, tag="pulse_report"):
    pulse: Any = None  # left out: the asking agent's pulse here
    summary: Any = ""
    items: Any = None  # [{check, status: ok|attention, note}]
    tell: Any = None  # what the owner should hear (it is told only if something is worth telling)


class ListLoops(InWorkspace, tag="list_loops"):
    pass
# --- tools, skills and memory (issue 23; ops/toolkit.py, ops/skills.py, ops/memory.py) ---

class ListTools(Frame, tag="list_tools"):
    agent: Any = None  # default: the asker (an agent); a person names one of its agents


class AttachTool(Frame, tag="attach_tool"):
    agent: str
    tool: str


class DetachTool(Frame, tag="detach_tool"):
    agent: str
    tool: str


class CallTool(InWorkspace, tag="call_tool", kw_only=True):
    tool: str
    arguments: Any = None  # checked against the tool's schema (`bad_arguments`)
    approval: str | None = None  # a call made again once the approval it was answered `pending` with is decided
    conversation: Any = None  # where the agent acts: which connected account a GitHub or Google tool uses (§64)


class AddConnection(Frame, tag="add_connection"):
    name: Any = None
    url: Any = None
    method: Any = "GET"
    header_name: Any = ""  # e.g. Authorization; its value is kept encrypted and never shown again
    header_value: Any = ""
    description: Any = ""


class RemoveConnection(Frame, tag="remove_connection"):
    name: str


class ListConnections(Frame, tag="list_connections"):
    pass


# connected accounts (issue 24; seed 003 §62-64; ops/connected.py, net/connected.py)
class ConnectAccount(Frame, tag="connect_account"):
    provider: Any = None  # github or google (those the operator registered a client for: `providers` lists them)
    redirect_uri: Any = None  # the client's loopback listener, http://127.0.0.1:<port>/<path> (RFC 8252 §7.3)
    workspace: Any = None  # a workspace's account (its admins connect it); default: the asker's own


class FinishConnect(Frame, tag="finish_connect"):
    state: Any = None  # as the provider redirected back with them
    code: Any = None
    error: Any = None  # the provider's `error` instead of a code (access_denied: the person declined)


class ListAccounts(Frame, tag="list_accounts"):
    workspace: Any = None  # that workspace's accounts and the asker's own; default: every workspace of theirs


class RevokeAccount(Frame, tag="revoke_account"):
    account: Any = None  # its id (list_accounts)


class ListSkills(Frame, tag="list_skills"):
    agent: Any = None  # default: the asker (an agent: its active skills); a person: its library, or its agent's


class ImportSkill(Frame, tag="import_skill"):
    files: Any = None  # {relative path: text} of a skill's folder (SKILL.md at its top; a URL is fetched by the client)
    folder: Any = None  # the folder's name (the skill's name must match it)
    agent: Any = None  # into this agent's layer (attaching it); default: the owner's layer


class AttachSkill(Frame, tag="attach_skill"):
    agent: str
    skill: str


class DetachSkill(Frame, tag="detach_skill"):
    agent: str
    skill: str


class ExportSkill(Frame, tag="export_skill"):
    skill: str
    agent: Any = None


class RemoveSkill(Frame, tag="remove_skill"):
    skill: str


class ListMemories(InWorkspace, tag="list_memories"):
    agent: Any = None  # default: the asker; a person names one of its agents
    query: Any = None
    any: bool = False  # true: memories with any of the query's words (a turn's recall), not all of them
    family: bool = False  # true: its family's layer instead (the family's and its siblings', ops/memory_care.py)


class Forget(InWorkspace, tag="forget", kw_only=True):
    id: str
    agent: Any = None


class ShareMemory(InWorkspace, tag="share_memory", kw_only=True):
    agent: str  # one of the asker's agents (id or name)
    into: str  # the workspace it recalls `workspace`'s memory in
    share: bool = True  # false: taken back


class ListMemoryShares(Frame, tag="list_memory_shares"):
    agent: Any = None  # default: every agent of the asker's
# --- where agents run, and the public agent directory (issue 24) ---

class AddHost(Frame, tag="add_host"):
    name: str


class ListHosts(Frame, tag="list_hosts"):
    pass


class SetRuntime(Frame, tag="set_runtime"):
    agent: str
    runtime: str  # local | hosted
    host: str | None = None


class PublishAgent(Frame, tag="publish_agent"):
    agent: str


class UnpublishAgent(Frame, tag="unpublish_agent"):
    agent: str


class ListDirectory(Frame, tag="list_directory"):
    pass


class CopyAgent(Frame, tag="copy_agent"):
    listing: str  # a listed agent's id
    name: str | None = None  # the copy's name (default: the listing's)
    workspace: str | None = None  # pinned to this workspace (default: everywhere, as any new agent)


# --- files (core/files.py, ops/files.py, net/uploads.py): uploaded in chunks, then sent with a message ---

class UploadFile(InWorkspace, tag="upload_file"):
    """The first chunk (`name`, `size`, and optionally `type` and `sha256`), or the next of an `upload` begun."""

    upload: ShortText | None = None  # the upload begun (its first chunk's answer): the chunk continues it
    name: Any = None
    type: Any = None  # a media type (left out: application/octet-stream)
    size: Any = None  # the whole file's bytes
    sha256: Any = None  # the whole file's, in hex: checked when the last chunk is in
    data: str = ""  # this chunk, base64


class DownloadFile(InWorkspace, tag="download_file"):
    file: ShortText
    offset: Any = None  # bytes into the file (left out: 0); each answer carries up to files.CHUNK bytes
