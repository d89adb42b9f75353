"""tests/net's loopback suite again, with the SQLite writer in its own process, as `ygg-server serve` runs it
(ygg_server/writer/process.py): the same answers, deliveries and events as with the writer on a thread.

The test functions are imported, so they run here with `writer` fixed to "process". Those that change the
engine's clock or read its memory skip themselves here (`tests.net.conftest.reaches_into_engine`).
"""

import pytest

from tests.net.test_agent_keys import *  # noqa: F401,F403
from tests.net.test_agent_protocol import *  # noqa: F401,F403
from tests.net.test_basics import *  # noqa: F401,F403
from tests.net.test_delivery import *  # noqa: F401,F403
from tests.net.test_events import *  # noqa: F401,F403
from tests.net.test_isolation import *  # noqa: F401,F403
from tests.net.test_limits import *  # noqa: F401,F403
from tests.net.test_paging import *  # noqa: F401,F403
from tests.net.test_org import *  # noqa: F401,F403
from tests.net.test_party import *  # noqa: F401,F403
from tests.net.test_party_frames import *  # noqa: F401,F403
from tests.net.test_pipeline import *  # noqa: F401,F403
from tests.net.test_queries import *  # noqa: F401,F403
from tests.net.test_sessions import *  # noqa: F401,F403


@pytest.fixture
def writer() -> str:
    return "process"
