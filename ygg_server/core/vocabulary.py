"""The rulebook's words, verbatim: every name here travels on the wire as its value."""

from enum import StrEnum

SYSTEM = "system.ygg"  # Agent'Ygg itself: author of notices, absorber of replies
POOL = "pool"  # the workspace pool's account in the ledger


class Kind(StrEnum):
    HUMAN = "human"
    AGENT = "agent"
    SYSTEM = "system"


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


class MessageType(StrEnum):
    REQUEST = "request"
    RESPONSE = "response"
    INFORM = "inform"


class State(StrEnum):
    WORKING = "working"
    WAITING = "waiting"
    NEEDS_HUMAN = "needs_human"
    DONE = "done"


class TopicStatus(StrEnum):
    OPEN = "open"
    PAUSED = "paused"
    CLOSED = "closed"


class Pause(StrEnum):
    NEEDS_HUMAN = "needs_human"
    CREDITS = "credits"


class ConversationKind(StrEnum):
    GENERAL = "general"
    DIRECT = "direct"
    GROUP = "group"
    SIDE = "side"  # a task delegated from a direct conversation runs here (seed 003 §15)


class RefusalReason(StrEnum):
    # seed 000, verbatim
    TOPIC_REQUIRED = "topic_required"
    TITLE_REQUIRED = "title_required"
    TOPIC_LIMIT = "topic_limit"
    TOPIC_CLOSED = "topic_closed"
    CREDITS_EXHAUSTED = "credits_exhausted"
    UNKNOWN_RECIPIENT = "unknown_recipient"
    # needed by seeds 002/003 (documented in docs/rules.md)
    PERMISSION_DENIED = "permission_denied"
    PLAN_LIMIT = "plan_limit"
    UNKNOWN_CONVERSATION = "unknown_conversation"
    UNKNOWN_TOPIC = "unknown_topic"
    UNKNOWN_WORKSPACE = "unknown_workspace"  # or one the asker is not in: answered alike (no tenant learns of another)
    BAD_AMOUNT = "bad_amount"
    # parties (docs/rules.md, "Parties")
    LAST_PARTICIPANT = "last_participant"
    BAD_HANDOFF = "bad_handoff"
    NO_ELIGIBLE_AGENT = "no_eligible_agent"  # a request to a capability no agent here declares (seed 003 §14)
    # editing and deleting one's own messages (core/revise.py)
    UNKNOWN_MESSAGE = "unknown_message"
    NOT_AUTHOR = "not_author"  # only a message's author edits or deletes it
    MESSAGE_DELETED = "message_deleted"  # a deleted message is not edited or deleted again
    EDIT_LIMIT = "edit_limit"  # too many edits, or an agent's edit longer than the credits it paid for
    # side threads (core/threads.py)
    BAD_THREAD_STATE = "bad_thread_state"  # a thread is ongoing, resolved or abandoned
    # artifacts (core/artifacts.py)
    UNKNOWN_ARTIFACT = "unknown_artifact"  # no such artifact (or version) in this workspace, or not the asker's to see
    BAD_ARTIFACT = "bad_artifact"  # an artifact's title, kind, body or comment that breaks its rules
    # result cards (core/cards.py)
    BAD_CARD = "bad_card"  # a card's template or data that breaks its rules (the detail names the field)
    UNKNOWN_ACTION = "unknown_action"  # no such button on that card (or the message has no card)
    CARD_DONE = "card_done"  # an email draft already sent takes no more presses
    # files (core/files.py)
    UNKNOWN_FILE = "unknown_file"  # no such upload of the sender's in this workspace (or one already sent)
    BAD_FILE = "bad_file"  # an upload that breaks its rules: too large for the plan, a wrong hash, a bad name


class ContextReason(StrEnum):
    # seed 000, verbatim
    CONTEXT_INFORM = "context_inform"
    RECIPIENT_DONE = "recipient_done"
    TOPIC_PAUSED = "topic_paused"
    ORPHAN_RESPONSE = "orphan_response"
    LOOP_SUSPECTED = "loop_suspected"
    WAKE_COALESCED = "wake_coalesced"
    # a person who is in the conversation but was not addressed (docs/rules.md)
    OBSERVER = "observer"
    # parties (docs/rules.md, "Parties")
    NOT_ADDRESSED = "not_addressed"  # another agent has the turn on a person's message
    HOP_LIMIT = "hop_limit"  # the person's message bought no more agent-to-agent hops
    THROTTLED = "throttled"  # too many agent messages in a row without a person
    # a message's correction, delivered to those it reached: context, never a wake (core/revise.py)
    MESSAGE_EDITED = "message_edited"
    MESSAGE_DELETED = "message_deleted"
    CARD_UPDATED = "card_updated"  # a card acted on in place (an email draft saved or sent): core/cards.py


class Notice(StrEnum):
    CLOSURE_POLL = "closure_poll"
    NUDGE = "nudge"
    RESUME = "resume"
    CREDITS_REFILLED = "credits_refilled"
    FUNDING_REQUEST = "funding_request"
    AUTO_DONE = "auto_done"
    HOP_LIMIT = "hop_limit"
    THROTTLED = "throttled"  # too many agent messages in a row: agents wake nobody until a person writes
    SIDE_RESULT = "side_result"  # a side conversation's final result, back where the task was asked for
    THREAD_SETTLED = "thread_settled"  # a side thread marked resolved, abandoned or ongoing, with its summary
