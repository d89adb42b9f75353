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

from msgspec import UNSET, Meta, UnsetType

from ..core import POOL
from .frame_base import DeliveryId, Frame, InConversation, InWorkspace, ShortText, Strings
from .work_frames import (  # the ops of issues 21 to 24: callers name every op frames.X
    AddLoop, AddPulse, ListLoops, LoopVerdict, PulseReport,  # (issue 22's loops and pulses)
    AddConnection, AddHost, AddReminder, AddRoutine, AllowRoutines, ArtifactDiff, AttachSkill, AttachTool, CallTool,
    CommentArtifact, ConnectAccount, CopyAgent, CreateArtifact, DecideApproval, DeleteSchedule, DetachSkill,
    DetachTool, ExportSkill, FinishConnect, Forget, GetApproval, GetArtifact, ImportSkill, ListAccounts,
    ListApprovals, ListArtifacts, ListConnections, ListDirectory, ListHosts, ListMemories, ListMemoryShares,
    ListSchedules, ListSkills, ListToolRules, ListTools, PauseSchedule, PressCard, PublishAgent, RemoveConnection,
    RemoveSkill, RequestApproval, RevokeAccount, SetRuntime, SetToolRule, SettleThread, ShareMemory, UnpublishAgent,
    UpdateArtifact, WorkGraph, DownloadFile, UploadFile,
)

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
    handoff: Any = None
    card: Any = None  # a result card: {"template", "data", "kind"?} (core/cards.py; `bad_card` names the field)
    # uploads sent with it (upload_file; core/files.py): charged by their stored size. (`attachment_bytes`, a size
    # the sender declared, is no longer read: an unknown field, ignored)
    files: Annotated[list[ShortText], Meta(max_length=100)] | None = None


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


ClientFrame = Union[
    Auth, Ping, Whoami, Send, Ack, Fund, SetBudget, History, SearchMessages, ListTopics, GetTopic, ListMembers,
    ListAgents, ListConversations, ListGroups, Balances, Presence, ListWorkspaces, ListJoinable, ListOrgs,
    MyAgents, ExplainAssignment, Subscribe, Unsubscribe, CreateOrg, CreateWorkspace, AddMember, AddOrgMember,
    LeaveOrg, LeaveWorkspace, JoinWorkspace, DeleteWorkspace, SetRestricted, SetPermissions, AddAgent, RevokeAgent,
    RotateKey, AddGroup, RemoveGroup, AddParticipant, RemoveParticipant, SetLead, SetProfile, SetSetting,
    GetPersona, SetPersona, GetRulebook, SetRulebook, GetProfile, GetSettings, SetPins, EditMessage, DeleteMessage,
    MessageVersions, RemoveMember, RemoveOrgMember, ListInvitations, AcceptInvitation, DeclineInvitation,
    ChangePassword, ListSessions, EndSession, SignOut, SettleThread, PressCard,
    CreateArtifact, UpdateArtifact, CommentArtifact, GetArtifact, ListArtifacts, ArtifactDiff, ListSchedules,
    AddReminder, AddRoutine, PauseSchedule, DeleteSchedule, AllowRoutines, RequestApproval, GetApproval,
    ListApprovals, DecideApproval, SetToolRule, ListToolRules, ListTools, AttachTool, DetachTool, CallTool,
    AddConnection, RemoveConnection, ListConnections, ListSkills, ImportSkill, AttachSkill, DetachSkill,
    ExportSkill, RemoveSkill, ListMemories, Forget, ShareMemory, ListMemoryShares, AddHost, ListHosts, SetRuntime,
    PublishAgent, UnpublishAgent, ListDirectory, CopyAgent, AddLoop, AddPulse, LoopVerdict, PulseReport, ListLoops,
    WorkGraph, ConnectAccount, FinishConnect, ListAccounts, RevokeAccount, UploadFile,
    DownloadFile,
]
BY_OP: dict[str, type[Frame]] = {t.__struct_config__.tag: t for t in ClientFrame.__args__}
CLIENT_OPS = frozenset(BY_OP)
