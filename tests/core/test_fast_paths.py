"""The core's fast paths agree with the plain definitions they replace (docs/rules.md, "Speed")."""

import uuid

from hypothesis import given, settings, strategies as st

from ygg_server.core import Conversation, ConversationKind, Directory, Kind, Membership, Participant
from ygg_server.core.directory import _DM_NAMESPACE, _derived
from ygg_server.core.loops import normalized, signature
from ygg_server.core.notices import human_members

WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2000\u2028\u3000"
texty = st.text(alphabet=st.sampled_from(list("aZé İ.ß") + list(WHITESPACE)), max_size=40) | st.text(max_size=40)


@settings(max_examples=500, deadline=None)
@given(texty)
def test_normalized_is_lowercase_words_joined_by_one_space(text):
    assert normalized(text) == " ".join(text.lower().split()).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=4))
def test_derived_ids_are_uuid5(parts):
    assert _derived(*parts) == str(uuid.uuid5(_DM_NAMESPACE, "\x1f".join(parts)))


def test_texts_equal_up_to_case_and_spacing_share_a_signature():
    assert signature("a", ("b",), "Hello  World\n").text_hash == signature("a", ("b",), " hello world").text_hash
    assert signature("a", ("b",), "hello world").text_hash != signature("a", ("b",), "hello worlds").text_hash


def _directory(restrict=None):
    ps = [Participant("human.a", Kind.HUMAN, "a"), Participant("human.b", Kind.HUMAN, "b"),
          Participant("bot", Kind.AGENT, "bot", owner="human.a")]
    ms = [Membership("human.a"), Membership("human.b", receive=restrict != "receive"),
          Membership("bot", can_message=frozenset({"human.a"}) if restrict == "can_message" else None,
                     takes_from=frozenset() if restrict == "takes_from" else None)]
    return Directory.build("w", ps, ms)


def test_directory_build_precomputes_receivers_and_restrictions():
    d = _directory()
    assert d.receivers == ("human.a", "human.b") and d.restricted is False
    for what in ("receive", "can_message", "takes_from"):
        assert _directory(what).restricted is True
    assert _directory("receive").receivers == ("human.a",)


def test_human_members_without_build_matches_with_build():
    d = _directory("receive")
    bare = Directory(d.workspace, d.participants, d.memberships, d.groups, d.refs)  # no precomputed fields
    assert bare.receivers is None and bare.restricted is True
    general = Conversation("g", "w", ConversationKind.GENERAL, "General")
    direct = Conversation("c", "w", ConversationKind.DIRECT, "", frozenset({"human.a", "bot"}))
    for conv in (general, direct):
        assert human_members(bare, conv) == human_members(d, conv)
