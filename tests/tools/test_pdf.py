"""A PDF of an artifact (issue 23; seed 003 §52: "a few platform tools such as ... making a PDF"): the writer's
bytes read back by pypdf (strict) and checked structurally, and the registry's `artifact_pdf` over loopback."""

from __future__ import annotations

import base64
import io
import re

import pypdf
import pytest

from ygg_server.client import Refused
from ygg_server.tools import pdf

BODY = "# Release plan\n\nShip on Tuesday (if QA agrees) \\ then tell everyone.\n" + \
    "\n".join(f"Step {i}: " + "check the thing carefully " * 8 for i in range(150)) + "\fAppendix: café — naïve ✓ 😀"


def test_the_pdf_reads_back_with_its_text_pages_and_title():
    data = pdf.render("Release plan: Q3", BODY, author="researcher")
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    assert reader.pdf_header == "%PDF-1.4" and reader.metadata.title == "Release plan: Q3"
    assert reader.metadata.author == "researcher"
    first = reader.pages[0].extract_text()
    assert first.startswith("Release plan: Q3") and "Ship on Tuesday (if QA agrees) \\ then tell everyone." in first
    assert len(reader.pages) == len(pdf.layout("Release plan: Q3", BODY)) > 5, "page breaks when a page is full"
    last = reader.pages[-1].extract_text()
    assert last.startswith("Appendix: café — naïve ? ?"), "a form feed starts a page; what the font lacks is ?"
    text = "".join(p.extract_text() for p in reader.pages)
    assert "Step 149:" in text and all(f"Step {i}:" in text for i in range(0, 150, 10))
    fonts = reader.pages[0]["/Resources"]["/Font"]
    assert {fonts[k]["/BaseFont"] for k in fonts} == {"/Helvetica", "/Helvetica-Bold", "/Courier"}


def test_the_cross_reference_table_gives_each_objects_offset():
    data = pdf.render("T", "one\ntwo")
    start = int(re.search(rb"startxref\n(\d+)\n%%EOF\n$", data).group(1))
    assert data[start:start + 5] == b"xref\n"
    head = re.match(rb"xref\n0 (\d+)\n", data[start:])
    n = int(head.group(1))
    rows = data[start + head.end():].split(b"\n")[:n]
    assert rows[0] == b"0000000000 65535 f " and all(len(r) == 19 for r in rows)
    for k, row in enumerate(rows[1:], 1):
        off = int(row[:10])
        assert data[off:].startswith(b"%d 0 obj\n" % k)


def test_lines_wrap_inside_the_margins_and_code_keeps_its_spaces():
    width = pdf.PAGE_W - 2 * pdf.MARGIN
    pages = pdf.layout("x", "word " * 500 + "\n" + "a" * 400)
    lines = [t for page in pages for k, t in page if k == "B"]
    assert all(pdf._width(t, pdf.SIZE, False) <= width for t in lines) and len(lines) > 10
    code = pdf.layout("x", "def f():\n    return 1", mono=True)
    assert ("B", "    return 1") in code[0]
    assert pdf.filename("Release plan: Q3 / final") == "Release-plan-Q3-final.pdf"
    assert pdf.filename("") == "artifact.pdf"


@pytest.mark.backends("sqlite", "postgres")
async def test_artifact_pdf_is_a_registry_tool_that_reads_only_what_the_agent_may_read(team):
    """Issue 23: the catalog holds "a PDF of an artifact"; the artifact is read as its reader may (seed 003 §10)."""
    alice = await team.person("alice")
    bot = await team.client(api_key=team.keys["researcher"])
    made = await bot.request("create_artifact", workspace=team.ws, conversation="general", topic="new",
                             topic_title="Plan", title="Release plan", kind="document", body=BODY)
    aid = made["artifact"]["id"]
    with pytest.raises(Refused) as e:  # attached by its owner first, as every tool
        await bot.call("call_tool", workspace=team.ws, tool="artifact_pdf", arguments={"artifact": aid})
    assert e.value.reason == "tool_not_attached"
    await alice.call("attach_tool", agent="researcher", tool="artifact_pdf")
    got = await bot.call("call_tool", workspace=team.ws, tool="artifact_pdf", arguments={"artifact": aid})
    assert got["ok"], got
    out = got["result"]
    data = base64.b64decode(out["pdf_base64"])
    assert out["filename"] == "Release-plan.pdf" and out["bytes"] == len(data) and out["version"] == 1
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    assert len(reader.pages) == out["pages"] and "Ship on Tuesday" in reader.pages[0].extract_text()
    missing = await bot.call("call_tool", workspace=team.ws, tool="artifact_pdf", arguments={"artifact": "nope"})
    assert not missing["ok"] and "not found" in missing["error"]
