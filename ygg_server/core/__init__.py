"""The routing core: the Agent'Ygg rulebook as pure functions of a snapshot and a clock.

No I/O, no clock, no randomness: `decide`, `due` and `fund` take what they judge
and return a `Decision` (data) for the store to apply in one transaction.
"""

from .decide import decide
from .decision import Decision, Delivery, Entry, Flag, Refusal, Routed, View
from .directory import Directory, Unresolved, derived_id, direct_id, general_id, group_id
from .funding import fund
from .model import (
    PLANS, Conversation, Member, Membership, Message, Participant, Pending, Plan, Post, Profile, Sig, Topic,
    plan_of,
)
from .timers import due, next_due
from .vocabulary import (
    POOL, SYSTEM, ContextReason, ConversationKind, Kind, MessageType, Notice, Pause,
    RefusalReason, Role, State, TopicStatus,
)

__all__ = [
    "decide", "due", "next_due", "fund", "Decision", "Delivery", "Entry", "Flag", "Refusal", "Routed",
    "View", "Directory", "Unresolved", "derived_id", "direct_id", "general_id", "group_id", "PLANS", "plan_of",
    "Conversation", "Member", "Membership", "Message", "Participant", "Pending", "Plan", "Post", "Profile", "Sig",
    "Topic", "POOL", "SYSTEM", "ContextReason", "ConversationKind", "Kind", "MessageType", "Notice",
    "Pause", "RefusalReason", "Role", "State", "TopicStatus",
]
