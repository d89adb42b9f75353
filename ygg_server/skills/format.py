"""The Agent Skills format (agentskills.io/specification), read and checked without I/O.

A skill is a folder named as the skill, holding `SKILL.md`: YAML front matter (`name`, `description` required;
`license`, `compatibility`, `metadata`, `allowed-tools` optional) then a Markdown body; beside it, optionally,
`scripts/`, `references/` and `assets/`. The rules checked (each refusal says which one broke):
- `name`: 1 to 64 characters, lowercase letters, digits and hyphens, no hyphen first, last or twice in a row,
  the same as its folder's name (when the folder is known);
- `description`: 1 to 1024 characters; `compatibility`: at most 500; `metadata`: a mapping of strings;
  `allowed-tools`: a space-separated list; no other top-level field;
- files only at SKILL.md or under the three optional folders, relative paths without `..`, text (UTF-8), each at
  most `FILE_LIMIT` bytes and all at most `TOTAL_LIMIT`.

Ygg reads `allowed-tools` as the tools a skill works with: attaching the skill attaches them (§43), and a skill
switches on only for an agent that has them all (§44's activation rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
FOLDERS = ("scripts/", "references/", "assets/")
FILE_LIMIT = 256 * 1024
TOTAL_LIMIT = 1024 * 1024
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class SkillError(ValueError):
    """A skill that breaks the format; the message says how."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    tools: tuple[str, ...] = ()  # allowed-tools
    front: dict[str, Any] = field(default_factory=dict)  # the front matter as written (export keeps it)
    files: dict[str, str] = field(default_factory=dict)  # path under the folder -> text (not SKILL.md)
    raw: str = ""  # SKILL.md as written (an export gives it back as imported)

    @property
    def line(self) -> str:
        """Its one line for the prompt's compact list."""
        first = " ".join(self.description.split())
        return first if len(first) <= 160 else first[:159] + "…"

    def skill_md(self) -> str:
        if self.raw:
            return self.raw
        return "---\n" + yaml.safe_dump(self.front, sort_keys=False, allow_unicode=True) + "---\n\n" + self.body


def parse_skill_md(text: str, folder: str | None = None) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a SKILL.md, checked; SkillError otherwise."""
    m = _FRONT.match(text.lstrip("\ufeff"))
    if not m:
        raise SkillError("SKILL.md must start with YAML front matter between two --- lines")
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        raise SkillError(f"the front matter is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(front, dict):
        raise SkillError("the front matter must be a mapping of fields")
    unknown = sorted(str(k) for k in front if k not in FIELDS)
    if unknown:
        raise SkillError(f"unknown front matter field(s): {', '.join(unknown)} (allowed: {', '.join(sorted(FIELDS))})")
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name:
        raise SkillError("name is required")
    if len(name) > 64 or not NAME.match(name):
        raise SkillError(f"name {name!r} must be 1-64 lowercase letters, digits and single hyphens, "
                         "not starting or ending with a hyphen")
    if folder is not None and folder != name:
        raise SkillError(f"name {name!r} must match its folder's name {folder!r}")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("description is required (what the skill does and when to use it)")
    if len(description) > 1024:
        raise SkillError("description is longer than 1024 characters")
    compat = front.get("compatibility")
    if compat is not None and (not isinstance(compat, str) or not 1 <= len(compat) <= 500):
        raise SkillError("compatibility is text of 1 to 500 characters")
    meta = front.get("metadata")
    if meta is not None and (not isinstance(meta, dict)
                             or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        raise SkillError("metadata is a mapping of text keys to text values")
    if "license" in front and not isinstance(front["license"], str):
        raise SkillError("license is text")
    tools = front.get("allowed-tools")
    if tools is not None and not isinstance(tools, str):
        raise SkillError("allowed-tools is a space-separated list of tool names")
    return front, text[m.end():].lstrip("\r\n")


def from_files(files: Any, folder: str | None = None) -> Skill:
    """A skill from its folder's files ({path: text}); SkillError saying what breaks the format."""
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise SkillError("a skill's files are {relative path: text}")
    if "SKILL.md" not in files:
        raise SkillError("a skill's folder must hold SKILL.md at its top")
    total = 0
    for path, text in files.items():
        if path != "SKILL.md" and (not path.startswith(FOLDERS) or ".." in path.split("/") or path.endswith("/")
                                   or "\\" in path or "\x00" in path):
            raise SkillError(f"{path}: a skill holds SKILL.md and files under scripts/, references/ or assets/ only")
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > FILE_LIMIT:
            raise SkillError(f"{path} is larger than {FILE_LIMIT // 1024} KiB")
        total += size
    if total > TOTAL_LIMIT:
        raise SkillError(f"the skill is larger than {TOTAL_LIMIT // 1024} KiB in all")
    front, body = parse_skill_md(files["SKILL.md"], folder)
    tools = tuple(dict.fromkeys(str(front.get("allowed-tools") or "").split()))
    return Skill(name=front["name"], description=front["description"].strip(), body=body, tools=tools,
                 front=front, files={p: t for p, t in files.items() if p != "SKILL.md"}, raw=files["SKILL.md"])


def read_folder(path) -> dict[str, str]:
    """A skill folder on disk as {path: text} (for import from a folder; a binary file is refused by name)."""
    from pathlib import Path

    root = Path(path)
    if not (root / "SKILL.md").is_file():
        raise SkillError(f"{root} holds no SKILL.md")
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts):
            rel = p.relative_to(root).as_posix()
            try:
                out[rel] = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise SkillError(f"{rel} is not text (UTF-8); Ygg keeps text files only") from None
    return out


def write_folder(skill_files: dict[str, str], into) -> None:
    """Export: a skill's files written under the folder `into` (made; named as the skill by the caller)."""
    from pathlib import Path

    root = Path(into)
    for rel, text in skill_files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
