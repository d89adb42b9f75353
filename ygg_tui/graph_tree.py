"""The work graph's answer (`work_graph`, docs/protocol.md "The work graph") as a tree to draw, without Textual:
conversation → topic → what hangs off it (what it waits on, delegations and handoffs, artifacts, the side threads
and side conversations it opened, each with its own topics), then the agents and the conversations they serve.

Each branch is a `Branch`: its label (Rich Text), where ⏎ goes (`at`: (conversation, topic or None), or None), and
its children. The screen (screens/work_graph.py) draws them with Textual's `Tree`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from .words import STATE_MARK, STATUS_MARK, printable, topic_status

STATUS_STYLE = {"needs_human": "bold red", "paused:credits": "bold yellow", "closed": "dim"}
THREAD_MARK = {"ongoing": "◌", "resolved": "✓", "abandoned": "✗"}


@dataclass
class Branch:
    label: Text
    at: tuple[str, str | None] | None = None
    children: list["Branch"] = field(default_factory=list)


def build(graph: dict, conv_name=None, namer=None) -> list[Branch]:
    """The top branches: each conversation (General, direct, group) and each side thread or side conversation
    whose origin is not drawn, then "Agents". `conv_name(node)`: a conversation's name as the client shows it;
    `namer(id)`: a participant's."""
    nodes = {n["id"]: n for n in graph.get("nodes", ())}
    edges = graph.get("edges", ())
    label = {n: x.get("label") or n for n, x in nodes.items()}
    if namer is not None:
        label.update({n: namer(x["ref"]) for n, x in nodes.items() if x["kind"] in ("agent", "person")})
    who = namer or (lambda p: label.get(f"agent:{p}", label.get(f"person:{p}", p)))
    under: dict[str, list[str]] = {}  # a node -> what hangs under it (topics, artifacts, threads, sides)
    off: dict[str, list[dict]] = {}  # a topic -> its waits_on, delegated and handed_off edges
    placed: set[str] = set()
    for e in edges:
        k = e["kind"]
        if k == "in" and nodes[e["from"]]["kind"] == "topic":
            under.setdefault(e["to"], []).append(e["from"])
        elif k == "in":  # an artifact: under the topic it was posted in, if drawn, else its conversation
            t = f"topic:{e['topic']}" if e.get("topic") and f"topic:{e['topic']}" in nodes else e["to"]
            under.setdefault(t, []).append(e["from"])
        elif k in ("opened_from", "delegated_from"):
            under.setdefault(e["to"], []).append(e["from"])
            placed.add(e["from"])
        elif k == "waits_on":
            off.setdefault(e["from"], []).append(e)
        elif k in ("delegated", "handed_off") and f"topic:{e['topic']}" in nodes:
            off.setdefault(f"topic:{e['topic']}", []).append(e)
    name = conv_name or (lambda n: n.get("label") or "")

    def conv(nid: str) -> Branch:
        n = nodes[nid]
        if n["kind"] == "thread":
            mark = THREAD_MARK.get(n.get("state"), "·")
            text = Text(f"⑂ {printable(name(n), one_line=True)} · {mark} {n.get('state')}", "cyan")
        elif n["kind"] == "side":
            text = Text(f"↳ {printable(name(n), one_line=True)}", "cyan")
        else:
            text = Text(printable(name(n), one_line=True), "bold")
        return Branch(text, (n["conversation"], None), [hang(c, n["conversation"]) for c in under.get(nid, ())])

    def hang(nid: str, cid: str) -> Branch:
        n = nodes[nid]
        if n["kind"] == "topic":
            return topic(nid)
        if n["kind"] == "artifact":
            authors = [label[e["to"]] for e in edges if e["from"] == nid and e["kind"] == "made_by"]
            what = f"{n.get('artifact_kind')} v{n.get('version')} · by {', '.join(authors)}"
            return Branch(Text(f"▣ {printable(n['label'], one_line=True)} · {what}", "magenta"), (cid, n.get("topic")))
        return conv(nid)

    def topic(nid: str) -> Branch:
        n = nodes[nid]
        status = topic_status({"status": n.get("state"), "pause": n.get("pause")})
        text = Text(f"{STATUS_MARK.get(status, '‖')} ", STATUS_STYLE.get(status, ""))
        text.append(printable(n.get("label") or "(untitled)", one_line=True), "bold" if status != "closed" else "dim")
        text.append(f" · {status}", STATUS_STYLE.get(status, "dim"))
        marks = [f"{who(p)} {STATE_MARK.get(s, '·')}"
                 for p, s in (n.get("members") or {}).items() if p != "system.ygg"]
        if marks:
            text.append("  " + " ".join(marks), "dim")
        at = (n["conversation"], n["topic"])
        kids = [Branch(_edge(e, label, who), at) for e in off.get(nid, ())]
        kids += [hang(c, n["conversation"]) for c in under.get(nid, ())]
        return Branch(text, at, kids)

    out = [conv(n) for n, x in nodes.items()
           if x["kind"] in ("conversation", "thread", "side") and n not in placed]
    agents = []
    for n, x in sorted(nodes.items(), key=lambda nx: label[nx[0]]):
        if x["kind"] != "agent":
            continue
        serves = [e for e in edges if e["from"] == n and e["kind"] == "serves"]
        kids = [Branch(Text(f"serves {printable(name(nodes[e['to']]), one_line=True)}" + (" (Lead)" if e.get("lead")
                                                                                          else "")),
                       (nodes[e["to"]]["conversation"], None)) for e in serves]
        agents.append(Branch(Text(f"◆ {label[n]}", "green"), None, kids))
    if agents:
        out.append(Branch(Text(f"Agents ({len(agents)})", "bold"), None, agents))
    return out


def _edge(e: dict, label: dict, who) -> Text:
    """What a topic waits on, or a delegation or handoff in it, as one line."""
    if e["kind"] == "waits_on":
        why = e.get("why")
        if why == "needs_human":
            by = ", ".join(who(p) for p in e.get("by") or ())
            return Text("⚑ waits on a person" + (f" (asked by {by})" if by else ""), "red")
        if why == "credits":
            dry = ", ".join(f"{who(p)}: {w}" for p, w in (e.get("by") or {}).items())
            return Text(f"$ waits on credits ({dry})", "yellow")
        return Text(f"◷ waits on {label.get(e['to'], e['to'])} ({'an answer' if why == 'answer' else 'working'})")
    verb = "handed off to" if e["kind"] == "handed_off" else "delegated to"
    n = f" ×{e['count']}" if e.get("count", 1) > 1 else ""
    return Text(f"⇢ {label.get(e['from'], e['from'])} {verb} {label.get(e['to'], e['to'])}{n}", "blue")
