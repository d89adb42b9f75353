"""core/files.py: which uploads a send may carry, and what a plan takes (issue 21), pure."""

from ygg_server.core import files
from ygg_server.core.model import FileRef
from ygg_server.core.vocabulary import RefusalReason as R


def _up(fid="f1", ws="w", who="a", message=None, size=10):
    return files.Upload(fid, ws, who, "n.txt", size, "text/plain", "ab" * 32, message)


def test_only_the_uploaders_unsent_uploads_in_the_workspace_go_with_a_send():
    """Seed 000: "attached files cost by size." The size is the stored upload's, never a declared number (issue 21),
    and an unknown id and a forbidden one answer the same (Core decision, docs/rules.md "Files")."""
    ups = {"f1": _up(), "f2": _up("f2", ws="other"), "f3": _up("f3", who="b"), "f4": _up("f4", message="m")}
    assert files.attach(["f1"], ups, "a", "w", set()) == (FileRef("f1", "n.txt", 10, "text/plain", "ab" * 32),)
    refusals = [files.attach([fid], ups, "a", "w", set()) for fid in ("nope", "f2", "f3", "f4")]
    assert {r.reason for r in refusals} == {R.UNKNOWN_FILE}
    assert len({r.detail.split(":")[0] for r in refusals}) == 1, "alike, whatever the reason"
    assert files.attach(["f1"], ups, "a", "w", {"f1"}).reason == R.UNKNOWN_FILE, "sent earlier in the batch"
    assert files.attach(["f1", "f1"], ups, "a", "w", set()).reason == R.BAD_FILE
    assert files.attach([f"x{i}" for i in range(files.MAX_FILES + 1)], ups, "a", "w", set()).reason == R.BAD_FILE


def test_each_plan_has_its_largest_file_and_names_are_names():
    """Core decision (docs/rules.md, "Files"): each plan has its largest file; a file's name is a name, not a path."""
    assert files.max_bytes("free") < files.max_bytes("team") == files.max_bytes(None) == files.max_bytes("team", 5000)
    for bad in ("", "  ", "../x", "a/b", "a\\b", ".", "x" * 256, "a\nb", "a\u202eb", 5, None):
        assert files.name_problem(bad), bad
    assert files.name_problem("report (final).pdf") is None
