"""Every number in the rulebook, in one place (docs/rules.md explains each)."""

SECOND = 1_000_000  # the core counts time in microseconds
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

TOPIC_LIMIT = 3  # open topics an agent may hold that it opened
MAX_NUDGES = 3  # nudges to a silent awaited participant
NUDGE_AFTER = 10 * MINUTE  # silence before each nudge (the n-th at n x this)
AUTO_DONE_AFTER = HOUR  # an unanswered closure poll counts as done after this

CHARS_PER_CREDIT = 1_000  # 1 credit per started 1,000 characters, at least 1
ATTACHMENT_BYTES_PER_CREDIT = 100_000  # attached files: 1 credit per started 100 kB

LOOP_MEMORY = 20  # agent messages remembered per topic since a person last wrote
REPEAT_LIMIT = 2  # the same text seen this often already: the next copy stops waking
PING_PONG = 8  # this many agent messages in a row between the same two agents
MAX_FUNDING = 1_000_000_000  # one funding at most

# Parties (docs/rules.md, "Parties")
MAX_HOPS = 6  # agent-to-agent hops one person's message buys (workspace setting party.maxHops)
MAX_HOPS_CEILING = 1_000_000_000  # the largest party.maxHops (and throttle) a workspace may set
THROTTLE_DIRECT = 8  # agent messages in a row without a person, in a direct conversation
THROTTLE_GROUP = 16  # the same in any other conversation


def message_cost(text: str, attachment_bytes: int, recipients: int) -> int:
    """Seed 000: 1 credit per started 1,000 characters, at least 1, for each recipient."""
    per = (len(text) + CHARS_PER_CREDIT - 1) // CHARS_PER_CREDIT or 1
    if attachment_bytes > 0:
        per += (attachment_bytes + ATTACHMENT_BYTES_PER_CREDIT - 1) // ATTACHMENT_BYTES_PER_CREDIT
    return per * (recipients if recipients > 0 else 1)


def party_limits(settings: dict) -> dict:
    """The workspace's party settings as View fields (docs/rules.md, "Parties")."""
    return {"max_hops": settings.get("party.maxHops", MAX_HOPS),
            "throttle": (settings.get("party.throttleDirect", THROTTLE_DIRECT),
                         settings.get("party.throttleGroup", THROTTLE_GROUP))}
