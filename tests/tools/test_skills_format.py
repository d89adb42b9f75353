"""Skills in the open Agent Skills format (issue 23; seed 003 §45: "Skills follow an open, portable format, so they
can be imported straight from a URL"): fixtures in the format, valid and malformed (each refused, saying why)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import httpx
import pytest

from ygg_server.skills.format import SkillError, from_files, read_folder, write_folder
from ygg_server.skills.source import read_source

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


def test_a_valid_skill_is_read_with_its_files_and_the_tools_it_works_with():
    skill = from_files(read_folder(FIXTURES / "valid" / "pdf-forms"), "pdf-forms")
    assert (skill.name, skill.tools) == ("pdf-forms", ("fetch_page",))
    assert skill.line == "Fill in PDF forms from what a person said. Use when someone asks to complete a form."
    assert skill.body.startswith("# Filling a form")
    assert sorted(skill.files) == ["references/FIELDS.md", "scripts/check.py"]
    assert skill.front["metadata"] == {"author": "example-org", "version": "1.0"}
    assert from_files(read_folder(FIXTURES / "valid" / "minimal"), "minimal").tools == ()


@pytest.mark.parametrize("folder, why", [
    ("no-front-matter", "must start with YAML front matter"),
    ("Bad-Name", "lowercase letters, digits and single hyphens"),
    ("double--hyphen", "lowercase letters, digits and single hyphens"),
    ("folder-mismatch", "must match its folder's name 'folder-mismatch'"),
    ("no-description", "description is required"),
    ("unknown-field", "unknown front matter field(s): triggers"),
    ("bad-yaml", "not valid YAML"),
    ("stray-file", "notes.txt: a skill holds SKILL.md and files under scripts/, references/ or assets/ only"),
    ("bad-metadata", "metadata is a mapping of text keys to text values"),
])
def test_a_malformed_skill_is_refused_saying_what_breaks_the_format(folder, why):
    """Issue 23: "import from a URL or a folder with validation (refuse what breaks the format, say why)"."""
    with pytest.raises(SkillError) as e:
        from_files(read_folder(FIXTURES / "malformed" / folder), folder)
    assert why in str(e.value)


def test_the_limits_of_the_format_are_kept():
    ok = "---\nname: a\ndescription: d\n---\nx"
    with pytest.raises(SkillError, match="no SKILL.md|must hold SKILL.md"):
        from_files({"references/a.md": "x"})
    with pytest.raises(SkillError, match="longer than 1024"):
        from_files({"SKILL.md": "---\nname: a\ndescription: " + "d" * 1025 + "\n---\n"})
    with pytest.raises(SkillError, match="a skill holds"):
        from_files({"SKILL.md": ok, "references/../../etc/passwd": "x"})
    with pytest.raises(SkillError, match="larger than"):
        from_files({"SKILL.md": ok, "assets/big.txt": "x" * (300 * 1024)})
    assert from_files({"SKILL.md": "\ufeff" + ok}).name == "a"


def test_an_export_gives_back_the_folder_as_imported(tmp_path):
    files = read_folder(FIXTURES / "valid" / "pdf-forms")
    skill = from_files(files, "pdf-forms")
    write_folder({"SKILL.md": skill.skill_md(), **skill.files}, tmp_path / "pdf-forms")
    assert read_folder(tmp_path / "pdf-forms") == files


async def test_a_skill_is_read_from_a_url_its_skill_md_or_a_zip_of_its_folder():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for rel, text in read_folder(FIXTURES / "valid" / "pdf-forms").items():
            z.writestr(f"pdf-forms/{rel}", text)
    pages = {"/skills/minimal/SKILL.md": httpx.Response(200, text=(FIXTURES / "valid/minimal/SKILL.md").read_text()),
             "/dl/pdf-forms.zip": httpx.Response(200, content=buf.getvalue()),
             "/dl/junk.zip": httpx.Response(200, content=b"PK\x03\x04junk")}
    client = httpx.AsyncClient(transport=httpx.MockTransport(
        lambda r: pages.get(r.url.path, httpx.Response(404))))
    folder, files = await read_source("https://skills.test/skills/minimal/SKILL.md", client)
    assert folder == "minimal" and from_files(files, folder).name == "minimal"
    folder, files = await read_source("https://skills.test/dl/pdf-forms.zip", client)
    assert folder == "pdf-forms" and sorted(files) == ["SKILL.md", "references/FIELDS.md", "scripts/check.py"]
    with pytest.raises(SkillError, match="not a valid zip"):
        await read_source("https://skills.test/dl/junk.zip", client)
    with pytest.raises(SkillError, match="answered 404"):
        await read_source("https://skills.test/missing/SKILL.md", client)
