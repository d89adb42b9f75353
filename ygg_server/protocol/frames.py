"""Client frames: one msgspec Struct per op, told apart by `op` (a tagged union), decoded once (`decode.py`).

A field is typed as strictly as the op answers a wrong value with `bad_frame`. A field whose wrong value the
op answers otherwise is `Any` and judged by the op: a send's content (a malformed message is downgraded to an
inform, docs/protocol.md "Sending"), sign-in credentials (`unauthenticated`), an amount, a budget or a
setting's value (`refused` with a reason), a query's filters (ignored unless they are what they should be).
`UNSET` marks a field whose absence means "leave as it is" (not the same as null). Fields a frame does not
know are ignored (docs/protocol.md, "Transport").
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ..core import POOL

ShortText = Annotated[str, Meta(min_length=1, max_length=200)]
DeliveryId = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]  # a 64-bit integer, as the stores keep it
Strings = Annotated[list[Any], Meta(max_length=100)]  # each item checked as a name (names.clean_each)


class Frame(msgspec.Struct, tag_field="op", kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """Every client frame: its op (the tag) and the `ref` its reply echoes (any JSON value here; `decode`
    accepts a string or a number)."""

    ref: Any = None

    @property
    def op(self) -> str:
        return self.__struct_config__.tag


class InWorkspace(Frame, kw_only=True, frozen=True, gc=False):
    workspace: str


class InConversation(InWorkspace, kw_only=True, frozen=True, gc=False):
    conversation: str


# --- the session ---

class Auth(Frame, tag="auth"):
    api_key: Any = UNSET  # credentials of the wrong type are not valid ones: `unauthenticated`
    handle: Any = UNSET
    password: Any = UNSET
    token: Any = UNSET
    prefetch: Annotated[int, Meta(ge=1, le=256)] | None = None
    directives: bool | UnsetType = UNSET
    device: Any = UNSET  # a person's: the device signing in, shown by list_sessions (a name: else not kept)


class Ping(Frame, tag="ping"):
    pass


class Whoami(Frame, tag="whoami"):
    pass


# --- messages ---

class Send(InWorkspace, tag="send"):
    conversation: str = "general"
    topic: str | None = None
    client_id: ShortText | None = None
    # content: lenient (`posts.to_post` downgrades wrong types to a malformed inform)
    text: Any = None
    type: Any = None
    state: Any = None
    to: Any = None
    waiting_for: Any = None
    in_reply_to: Any = None
    title: Any = None
    attachment_bytes: Any = None
    handoff: Any = None


class Ack(Frame, tag="ack"):
    ids: list[DeliveryId]


# --- credits ---

class Fund(InWorkspace, tag="fund"):
    agent: Any = None
    pool: Any = None  # true: the workspace's pool (anything else: `agent`)
    amount: Any = None  # the core refuses what is not a whole number of credits (`bad_amount`)

    def __post_init__(self) -> None:
        if not isinstance(self.account, str):
            raise ValueError('fund needs "workspace" and "agent" (or "pool": true)')

    @property
    def account(self) -> Any:
        """What is funded: the pool, or the agent named."""
        return POOL if self.pool is True else self.agent


class EditMessage(InWorkspace, tag="edit_message"):
    """One's own message, its text replaced (the older kept as a version, `message_versions`)."""

    message: ShortText
    text: str


class DeleteMessage(InWorkspace, tag="delete_message"):
    """One's own message, its text taken away: it shows as deleted to everyone."""

    message: ShortText


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


class SetBudget(InWorkspace, tag="set_budget"):
    topic: str
    budget: Any = None  # credits, or null for none; the writer refuses anything else (`bad_amount`)


# --- queries ---

class History(InWorkspace, tag="history"):
    conversation: str = "general"
    topic: Any = None  # a topic id; anything else: every topic
    before: str | None = None
    limit: Any = None  # read as a whole number (queries._limit)


class SearchMessages(InWorkspace, tag="search_messages"):
    query: Any = None  # anything but text finds nothing
    limit: Any = None


class MessageVersions(InWorkspace, tag="message_versions"):
    message: ShortText


class ListTopics(InWorkspace, tag="list_topics"):
    conversation: str | None = None
    status: Any = None  # a status; anything else: every status


class GetTopic(InWorkspace, tag="topic"):
    topic: Any = None  # not a topic id: not_found


class ListMembers(InWorkspace, tag="list_members"):
    pass


class ListAgents(InWorkspace, tag="list_agents"):
    pass


class ListConversations(InWorkspace, tag="list_conversations"):
    pass


class ListGroups(InWorkspace, tag="list_groups"):
    pass


class Balances(InWorkspace, tag="balances"):
    pass


class Presence(InWorkspace, tag="presence"):
    pass


class ListWorkspaces(Frame, tag="list_workspaces"):
    pass


class ListJoinable(Frame, tag="list_joinable"):
    pass


class ListOrgs(Frame, tag="list_orgs"):
    pass


class MyAgents(Frame, tag="my_agents"):
    pass


class ExplainAssignment(InWorkspace, tag="explain_assignment"):
    capability: str
    text: str = ""
    sender: Any = None  # whose request (default: the asker); not one participant's name: `unknown_member`


# --- live events ---

class Subscribe(InWorkspace, tag="subscribe"):
    monitor: bool = False


class Unsubscribe(InWorkspace, tag="unsubscribe"):
    pass


# --- management ---

def _named(name: str, needs: str) -> None:
    if not name.strip():
        raise ValueError(needs)


class CreateOrg(Frame, tag="create_org"):
    name: str

    def __post_init__(self) -> None:
        _named(self.name, "create_org needs a name")


class CreateWorkspace(Frame, tag="create_workspace"):
    name: str
    restricted: bool = False
    org: str | None = None

    def __post_init__(self) -> None:
        _named(self.name, "create_workspace needs a name (and optionally restricted, org)")


class AddMember(InWorkspace, tag="add_member"):
    handle: str
    role: str = "member"


class AddOrgMember(Frame, tag="add_org_member"):
    org: str
    handle: str
    role: str = "member"


class LeaveOrg(Frame, tag="leave_org"):
    org: str


class LeaveWorkspace(InWorkspace, tag="leave_workspace"):
    pass


class JoinWorkspace(InWorkspace, tag="join_workspace"):
    pass


class DeleteWorkspace(InWorkspace, tag="delete_workspace"):
    pass


class SetRestricted(InWorkspace, tag="set_restricted"):
    restricted: bool


class SetPermissions(InWorkspace, tag="set_permissions"):
    agent: str
    send: bool | UnsetType = UNSET
    receive: bool | UnsetType = UNSET
    monitor: bool | UnsetType = UNSET
    can_message: list[Any] | UnsetType = UNSET  # names, each resolved in the workspace (`unknown_member`)
    takes_from: list[Any] | UnsetType = UNSET

    def changes(self) -> dict[str, Any]:
        """The permissions this frame sets (those left out stay as they are)."""
        return {k: v for k in ("send", "receive", "monitor", "can_message", "takes_from")
                if (v := getattr(self, k)) is not UNSET}


class AddAgent(Frame, tag="add_agent"):
    name: str
    workspace: str | None = None


class RevokeAgent(Frame, tag="revoke_agent"):
    agent: str


class RotateKey(Frame, tag="rotate_key"):
    agent: str


class AddGroup(InWorkspace, tag="add_group"):
    name: str
    members: list[str]


class RemoveGroup(InWorkspace, tag="remove_group"):
    name: str


# --- people's accounts and consent (issue 18: ops/invitations.py, ops/accounts.py) ---

class RemoveMember(InWorkspace, tag="remove_member"):
    handle: str


class RemoveOrgMember(Frame, tag="remove_org_member"):
    org: str
    handle: str


class ListInvitations(Frame, tag="list_invitations"):
    pass


class AcceptInvitation(Frame, tag="accept_invitation"):
    invitation: str
    agents: bool = False  # whether the person's agents follow them there


class DeclineInvitation(Frame, tag="decline_invitation"):
    invitation: str


class ChangePassword(Frame, tag="change_password"):
    password: Any = None  # the current one (wrong: `wrong_password`)
    new_password: Any = None  # at least accounts.MIN_PASSWORD characters (`weak_password`)


class ListSessions(Frame, tag="list_sessions"):
    pass


class EndSession(Frame, tag="end_session"):
    session: str  # an id from list_sessions, "others" or "all"


class SignOut(Frame, tag="sign_out"):
    pass


# --- parties and profiles (decided by the writer) ---

class PartyChange(InConversation, kw_only=True, frozen=True, gc=False):
    participant: str

    @property
    def target(self) -> str | None:
        """Who the change is about (set_lead's: the new Lead, or None)."""
        return self.participant


class AddParticipant(PartyChange, tag="add_participant"):
    pass


class RemoveParticipant(PartyChange, tag="remove_participant"):
    pass


class SetLead(InConversation, tag="set_lead"):
    lead: str | None  # required: null is no Lead

    @property
    def target(self) -> str | None:
        return self.lead


class SetProfile(Frame, tag="set_profile"):
    agent: str
    title: Any = UNSET  # the text fields are checked as names are (`bad_name`)
    description: Any = UNSET
    capabilities: Strings | UnsetType = UNSET
    tools: Strings | UnsetType = UNSET
    generalist: bool | UnsetType = UNSET
    cost: Annotated[int, Meta(ge=0, le=10**6)] | UnsetType = UNSET

    PROFILE: ClassVar = ("title", "description", "capabilities", "generalist", "tools", "cost")

    def profile(self) -> dict[str, Any]:
        """The profile fields this frame sets (those left out stay as they are)."""
        return {k: v for k in self.PROFILE if (v := getattr(self, k)) is not UNSET}


class SetSetting(InWorkspace, tag="set_setting"):
    key: str
    value: Any = None  # checked against the setting (`bad_amount`); null: back to its default


class GetProfile(Frame, tag="get_profile"):
    agent: str


class GetSettings(InWorkspace, tag="get_settings"):
    pass


class SetPins(Frame, tag="set_pins"):
    agent: str
    workspaces: Annotated[list[str], Meta(max_length=1000)] | None  # required: null unpins


# --- directives ---

class GetPersona(Frame, tag="get_persona"):
    agent: Any = None  # default: the asker; not an agent it may see: not_found


class SetPersona(Frame, tag="set_persona"):
    agent: Any = None
    text: Any = None  # not a persona: `persona_empty`
    why: Any = ""


class GetRulebook(InConversation, tag="get_rulebook"):
    pass


class SetRulebook(InConversation, tag="set_rulebook"):
    rulebook: Any = UNSET  # the rules to change, or null for all defaults; left out or not an object: `bad_rulebook`


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


ClientFrame = Union[
    Auth, Ping, Whoami, Send, Ack, Fund, SetBudget, History, SearchMessages, ListTopics, GetTopic, ListMembers,
    ListAgents, ListConversations, ListGroups, Balances, Presence, ListWorkspaces, ListJoinable, ListOrgs, MyAgents,
    ExplainAssignment, Subscribe, Unsubscribe, CreateOrg, CreateWorkspace, AddMember, AddOrgMember, LeaveOrg,
    LeaveWorkspace, JoinWorkspace, DeleteWorkspace, SetRestricted, SetPermissions, AddAgent, RevokeAgent, RotateKey,
    AddGroup, RemoveGroup, AddParticipant, RemoveParticipant, SetLead, SetProfile, SetSetting, GetPersona,
    SetPersona, GetRulebook, SetRulebook, GetProfile, GetSettings, SetPins, EditMessage, DeleteMessage,
    SettleThread, CreateArtifact, UpdateArtifact, CommentArtifact, GetArtifact, ListArtifacts, ArtifactDiff,
    MessageVersions, RemoveMember, RemoveOrgMember, ListInvitations, AcceptInvitation, DeclineInvitation,
    ChangePassword, ListSessions, EndSession, SignOut,
    ListSchedules, AddReminder, AddRoutine, PauseSchedule, DeleteSchedule, AllowRoutines,
    RequestApproval, GetApproval, ListApprovals, DecideApproval, SetToolRule, ListToolRules,
    ChangePassword, ListSessions, EndSession, SignOut, ListTools, AttachTool, DetachTool, CallTool, AddConnection,
    RemoveConnection, ListConnections, ListSkills, ImportSkill, AttachSkill, DetachSkill, ExportSkill, RemoveSkill,
    ListMemories, Forget,
    ChangePassword, ListSessions, EndSession, SignOut, AddHost, ListHosts, SetRuntime, PublishAgent, UnpublishAgent,
    ListDirectory, CopyAgent,
]
BY_OP: dict[str, type[Frame]] = {t.__struct_config__.tag: t for t in ClientFrame.__args__}
CLIENT_OPS = frozenset(BY_OP)

# What a `bad_frame` adds about a field, after naming it and what is wrong (decode.py)
HINTS = {
    "workspace": "workspace is a workspace id (see list_workspaces)",
    "conversation": "conversation is general, dm:<participant>, group:<name> or a conversation id",
    "topic": 'topic is a topic id (or "new" in a send)',
    "client_id": "client_id is a short string (1 to 200 characters)",
    "before": "before is the cursor of a previous page",
    "ids": "ids must be a list of delivery ids: the integer id of each deliver frame",
    "prefetch": "prefetch is a whole number from 1 to 256 (default 16)",
    "directives": "directives is true or false (default true)",
    "monitor": "monitor is true or false",
    "restricted": "restricted is true or false",
    "send": "send is true or false",
    "receive": "receive is true or false",
    "generalist": "generalist is true or false",
    "can_message": "can_message is a list of participants (empty: anyone)",
    "takes_from": "takes_from is a list of participants (empty: anyone)",
    "capabilities": "capabilities must be a list of up to 100 short strings",
    "tools": "tools must be a list of up to 100 short strings",
    "cost": "cost is a whole number from 0 to 1,000,000",
    "agent": "agent is an agent's id, or a name",
    "participant": "participant is a participant's name or id",
    "lead": "lead is a participant's name or id, or null for none",
    "members": "members is a list of names, as in a send's to",
    "org": "org is an organization id (see list_orgs)",
    "role": "role is owner, admin, member or viewer",
    "capability": "capability is a capability agents declare",
    "key": "key is a setting's name",
    "workspaces": "workspaces is a list of workspace ids, or null to unpin",
    "message": "message is a message id",
    "text": "text is the message's new text",
    "handle": "handle is a person's handle (@alice or alice)",
    "invitation": "invitation is an invitation's id (see list_invitations)",
    "agents": "agents is true or false (whether your agents follow you there; default false)",
    "session": 'session is a session id (see list_sessions), "others" or "all"',
}
