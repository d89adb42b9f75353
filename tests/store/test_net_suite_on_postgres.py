"""tests/net's loopback suite, run again on PostgreSQL: the same behaviour from either store.

The test functions are imported from tests/net, so they run here with this directory's
`server` and `team` fixtures, with `store` fixed to "postgres". Tests that reach into
SQLite or the embedded engine's internals stay in tests/net only (listed in SQLITE_ONLY).
"""

import pytest

from tests.net.test_assign import *  # noqa: F401,F403
from tests.net.test_agent_keys import *  # noqa: F401,F403
from tests.net.test_basics import *  # noqa: F401,F403
from tests.net.test_closing_words import *  # noqa: F401,F403
from tests.net.test_delivery import *  # noqa: F401,F403
from tests.net.test_directives import test_a_direct_conversation_that_grows_into_a_party_shows_in_the_next_directive  # noqa: F401,E501
from tests.net.test_events import *  # noqa: F401,F403
from tests.net.test_isolation import *  # noqa: F401,F403
from tests.net.test_limits import *  # noqa: F401,F403
from tests.net.test_my_agents import *  # noqa: F401,F403
from tests.net.test_names import *  # noqa: F401,F403
from tests.net.test_paging import *  # noqa: F401,F403
from tests.net.test_org import *  # noqa: F401,F403
from tests.net.test_party import *  # noqa: F401,F403
from tests.net.test_party_frames import *  # noqa: F401,F403
from tests.net.test_pins import *  # noqa: F401,F403
from tests.net.test_queries import *  # noqa: F401,F403
from tests.net.test_sessions import *  # noqa: F401,F403


@pytest.fixture
def store() -> str:
    return "postgres"
