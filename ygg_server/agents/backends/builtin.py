"""Built-in offline agents: no model, no network, several personalities, rich enough for a demo.

They read the wake as structured data (`TurnInput.event`, built by the bridge)
and answer through the same interface as a model: a TurnOutput, with tool calls
(search_corpus, send_message) run by the bridge between rounds. The bridge does
the rulebook's bookkeeping for every backend (closure polls, nudges, resumes,
credits); these only decide what to say.

- researcher: answers from the bundled handbook (search_corpus), once, then done; given `artifact_create`, it posts
  what it found in full as an artifact (a document) beside its short answer, which carries a briefing card (seed
  003 §11) of the sections found; its "More detail" button, pressed, wakes it to answer with the next sections;
  given `reminder_create`, "remind me in 5 minutes to …" sets a reminder for whoever asked.
- reviewer: reviews what it is asked (the files sent with it too: read with `file_read`, what each holds is in its
  answer); anything risky (deploy, delete, payment…) goes to a person first with state needs_human, and the verdict
  follows their answer.
- lead: delegates a request to its team (in the same topic; asked in a direct
  conversation, with one request to the whole team there, which the server moves
  into a side conversation, seed 003 §15), then answers with what came back and
  says done, in the topic where it was asked; outside a direct conversation its answer carries a
  `<dm target="reviewer">` follow-up, a side thread (seed 003 §5), which it settles with the answer it gets; asked for
  the status (where things stand), it reads the work graph (seed 003 §49, `work_graph`) and says it.
- eager: keeps everyone posted and writes long answers; it spends its credits
  until a person has to fund it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from .. import corpus
from ..types import ToolCall, TurnInput, TurnOutput
from .base import Backend

RISKY = re.compile(r"\b(deploy\w*|delet\w*|drop|production|prod|release|merg\w*|payment|pay|money|"
                   r"invoice|secret\w*|password\w*|approv\w*|rm\s+-rf|migrat\w*)\b", re.I)
REMIND = re.compile(r"\bremind me (?:in (?P<n>\d{1,4}) ?(?P<unit>minutes?|mins?|m|hours?|h)\b )?(?:to|about)\b"
                    r"(?P<what>.*)", re.I | re.S)  # (not "remind me how …": that is a question)
YES = re.compile(r"\b(yes|yep|ok|okay|approved?|go ahead|lgtm|sure|fine)\b", re.I)
# a question the lead answers from the work graph (the demo's morning digest asks one)
STATUS = re.compile(r"\b(status|where (?:do )?(?:we|things) stand|work graph|which topics are open|who is waiting on)",
                    re.I)
NO = re.compile(r"\b(no|nope|don'?t|do not|reject\w*|stop|wait)\b", re.I)


LOOP_ASK = re.compile(r"\(loop (\S+), iteration \d+:")  # what core/schedule.py's fire appends to a loop's goal
PULSE_ASK = re.compile(r"\(pulse (\S+):")  # ... and to a pulse's checklist


def clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: max(0, n - 1)].rstrip() + "…"


def quoted(text: str) -> str:
    """The part of a delegated request in “…” (what the person asked), else the whole text."""
    m = re.search(r"“(.+)”", text, re.S)
    return m.group(1) if m else text


def graph_summary(g: Any) -> str:
    """The lead's status from a `work_graph` answer: open topics, what waits on a person or on credits, the side
    threads still ongoing, delegations and artifacts."""
    if not isinstance(g, dict):
        return "I could not read the work graph just now."
    nodes = {n["id"]: n for n in g.get("nodes", ())}
    edges = g.get("edges", ())
    topics = [n for n in nodes.values() if n["kind"] == "topic"]
    waiting = {e["from"] for e in edges if e["to"] == "need:person"}
    broke = {e["from"] for e in edges if e["to"] == "need:credits"}
    title = lambda n: f"“{clip(nodes[n].get('label') or 'untitled', 40)}”"  # noqa: E731
    closed = sum(t["state"] == "closed" for t in topics)
    parts = [f"{len(topics) - closed} open topic(s), {closed} closed"]
    parts.append("waiting on a person: " + ", ".join(title(n) for n in sorted(waiting)) if waiting
                 else "no topic waits on a person")
    if broke:
        parts.append("waiting on credits: " + ", ".join(title(n) for n in sorted(broke)))
    threads = [n for n in nodes.values() if n["kind"] == "thread" and n.get("state") == "ongoing"]
    delegated = sum(e.get("count", 1) for e in edges if e["kind"] in ("delegated", "handed_off"))
    artifacts = sum(n["kind"] == "artifact" for n in nodes.values())
    parts.append(f"{len(threads)} side thread(s) ongoing, {delegated} delegation(s), {artifacts} artifact(s)")
    return "Where things stand (the work graph, w in the TUI): " + "; ".join(parts) + "."


def _results(inp: TurnInput, name: str) -> list[Any]:
    """Decoded results of earlier calls to tool `name` in this turn, in order."""
    out = []
    for s in inp.steps:
        for r in s.results:
            if r.name == name:
                try:
                    out.append(json.loads(r.content))
                except ValueError:
                    out.append(r.content)
    return out


class Personality:
    def __init__(self, options: dict[str, Any], corpus_path: str | None):
        self.options = options
        self.corpus_path = corpus_path

    def length(self, ev: dict) -> int:
        return int((ev.get("rulebook") or {}).get("length") or 800)

    def search(self, inp: TurnInput, query: str) -> tuple[ToolCall | None, list[dict] | None]:
        """Ask the bridge's search_corpus tool (if this agent has it), or search directly."""
        done = _results(inp, "search_corpus")
        if done:
            return None, done[-1] if isinstance(done[-1], list) else []
        if any(t.name == "search_corpus" for t in inp.tools):
            return ToolCall(name="search_corpus", arguments={"query": query}, id="search"), None
        return None, [{"title": s.title, "text": s.text} for _, s in corpus.search(query, self.corpus_path)]

    def read_files(self, inp: TurnInput, ev: dict) -> tuple[ToolCall | None, list[dict]]:
        """The files sent with the wake's message, read one by one with file_read (issue 21): the next call, or
        what was read (each file's name, type, size and text)."""
        files = (ev.get("message") or {}).get("files") or []
        if not files or not any(t.name == "file_read" for t in inp.tools):
            return None, []
        read = [r for r in _results(inp, "file_read")]
        if len(read) < min(len(files), 3):
            f = files[len(read)]
            return ToolCall(name="file_read", arguments={"file": f["id"]}, id=f"file-{len(read)}"), []
        return None, [r for r in read if isinstance(r, dict)]

    def turn(self, inp: TurnInput) -> TurnOutput:
        ev = inp.event
        why = ev.get("why")
        if why == "request":
            text = (ev.get("message") or {}).get("text") or ""
            loop, pulse = LOOP_ASK.search(text), PULSE_ASK.search(text)
            if loop and any(t.name == "loop_verdict" for t in inp.tools):
                return self.on_loop(inp, text[:loop.start()].strip(), loop.group(1))
            if pulse and any(t.name == "pulse_report" for t in inp.tools):
                return self.on_pulse(inp, text[:pulse.start()].strip(), pulse.group(1))
            return self.on_request(inp, ev)
        if why == "response":
            return self.on_response(inp, ev)
        if why == "person":
            return self.on_person(inp, ev)
        return self.on_other(inp, ev)

    def on_loop(self, inp: TurnInput, goal: str, loop: str) -> TurnOutput:
        """An iteration of a loop (seed 003 §39): read the notes on its goal, then end it with a verdict. What it finds
        does not change between iterations, so the server ends such a loop for want of progress."""
        if _results(inp, "loop_verdict"):
            return TurnOutput(text=None)  # (the verdict is the iteration's report; what follows is the server's)
        found = [s for _, s in corpus.search(goal, self.corpus_path, k=3)]
        titles = ", ".join(s.title for s in found) or "nothing"
        return TurnOutput(tool_calls=[ToolCall(name="loop_verdict", id="verdict", arguments={
            "loop": loop, "verdict": "continue" if found else "stuck", "result": titles,
            "report": f"Read {len(found)} handbook notes on “{clip(goal, 60)}”: {titles}."})])

    def on_pulse(self, inp: TurnInput, checklist: str, pulse: str) -> TurnOutput:
        """A pulse (seed 003 §33-34): each line of its checklist looked at, and a structured report, not a message."""
        if _results(inp, "pulse_report"):
            return TurnOutput(text=None)
        checks = [ln.strip(" -*•\t") for ln in checklist.splitlines() if ln.strip(" -*•\t")][:20]
        items = [{"check": clip(c, 120), "status": "ok", "note": "nothing new since the last pulse"} for c in checks]
        return TurnOutput(tool_calls=[ToolCall(name="pulse_report", id="pulse", arguments={
            "pulse": pulse, "summary": f"Went through {len(items)} checks: nothing needs you.", "items": items})])

    def on_other(self, inp: TurnInput, ev: dict) -> TurnOutput:
        """Woken by something it did not ask for in so many words (say, an answer in a side thread its `<dm>` opened:
        the server made that request, not the bridge)."""
        return TurnOutput(text=None)

    def on_request(self, inp: TurnInput, ev: dict) -> TurnOutput:
        return TurnOutput(text="Noted.")

    def on_response(self, inp: TurnInput, ev: dict) -> TurnOutput:
        return TurnOutput(text=None)

    def on_person(self, inp: TurnInput, ev: dict) -> TurnOutput:
        """A person wrote to us without a request (say, an answer to something we did not ask)."""
        return TurnOutput(text=None)


class Researcher(Personality):
    """With its skill `handbook-answers` (agents/data/skills/), it loads the skill's instructions on demand and
    follows them: what it remembers of the subject first, the section named as the source, and one line kept in
    its memory of who asked about what (recalled in a later turn)."""

    SKILL = "handbook-answers"

    def on_request(self, inp, ev):
        press = ev["message"].get("press")
        if press:  # a button of its briefing card, pressed (seed 003 §13: the click handed back as a signal)
            return self.on_press(inp, ev, press)
        tools = {t.name for t in inp.tools}
        reminded = self.reminder(inp, ev, tools)
        if reminded is not None:
            return reminded
        follow = self.SKILL in (ev.get("skills") or []) and "load_skill" in tools
        if follow and not _results(inp, "load_skill"):
            return TurnOutput(tool_calls=[ToolCall(name="load_skill", arguments={"name": self.SKILL}, id="skill")])
        loaded = follow and any(isinstance(r, dict) and "Source: handbook" in r.get("instructions", "")
                                for r in _results(inp, "load_skill"))
        query = ev["message"].get("text", "")
        call, found = self.search(inp, query)
        if call:
            return TurnOutput(tool_calls=[call])
        if not found:
            return TurnOutput(text="I found nothing about that in the handbook; a person may know more.",
                              type="response", state="done")
        best = found[0]
        if len(found) > 1 and "artifact_create" in tools and not _results(inp, "artifact_create"):
            # seed 003 §8: what it found, in full, as an artifact (a document) beside its short answer
            title = clip(f"Notes: {ev.get('topic', {}).get('title') or clip(quoted(query), 40)}", 80)
            body = "\n\n".join(f"## {f['title']}\n\n{f['text']}" for f in found[:4])
            return TurnOutput(tool_calls=[ToolCall(name="artifact_create", id="notes", arguments={
                "title": title, "kind": "document", "body": f"# {title}\n\nFrom the Ygg handbook.\n\n{body}\n"})])
        if loaded and "remember" in tools and not _results(inp, "remember"):
            who = ev["message"].get("author_name") or "someone"
            return TurnOutput(tool_calls=[ToolCall(name="remember", id="keep", arguments={
                "note": f"{who} asked about “{best['title']}” ({clip(quoted(query), 80)})"})])
        more = f" (see also: {', '.join(f['title'] for f in found[1:3])})" if len(found) > 1 else ""
        made = [r for r in _results(inp, "artifact_create") if isinstance(r, dict) and r.get("artifact")]
        if made:
            more += f" My notes are in the artifact “{made[0]['artifact']['title']}”."
        lead = f"From the Ygg handbook, “{best['title']}”: "
        before = after = ""
        if loaded:
            remembered = ((ev.get("recalled") or {}).get("found") or {}).get("memory") or []
            before = f"Last time, {clip(remembered[0], 120)}. " if remembered else ""
            after = f"\nSource: handbook, “{best['title']}”."
        n = self.length(ev) - len(lead) - len(more) - len(before) - len(after)
        return TurnOutput(text=before + lead + clip(best["text"], n) + more + after, type="response", state="done",
                          card=self.briefing(ev, query, found))

    @staticmethod
    def briefing(ev: dict, query: str, found: list[dict]) -> dict:
        """A briefing card of what the handbook says (core/card_templates.briefing): the sections found, each clipped."""
        subject = ev.get("topic", {}).get("title") or clip(quoted(query), 60)
        return {"template": "briefing", "data": {
            "title": clip(f"Briefing: {subject}", 120), "date": "from the Ygg handbook",
            "summary": clip(found[0]["text"], 280),
            "items": [{"heading": clip(f["title"], 120), "text": clip(f["text"], 200)} for f in found[1:3]],
            "rows": [{"label": "Sources", "value": ", ".join(clip(f["title"], 40) for f in found[:3])}],
            "tags": ["handbook"], "buttons": [{"action": "more", "label": "More detail"}]}}

    def on_press(self, inp, ev, press: dict) -> TurnOutput:
        """"More detail" on its briefing card: the next sections of the handbook on the card's subject."""
        subject = (press.get("card") or "").removeprefix("Briefing: ")
        call, found = self.search(inp, subject)
        if call:
            return TurnOutput(tool_calls=[call])
        rest = (found or [])[3:5] or (found or [])[:1]
        if not rest:
            return TurnOutput(text="The handbook has nothing more on that.", type="response", state="done")
        text = " ".join(f"“{f['title']}”: {clip(f['text'], 300)}" for f in rest)
        return TurnOutput(text=clip(f"More on {subject}: {text}", self.length(ev)), type="response", state="done")


    def reminder(self, inp, ev, tools) -> TurnOutput | None:
        """"Remind me in 5 minutes to …": a reminder of its own (the registry's `reminder_create`, seed 003 §41),
        delivered later in its direct conversation with whoever asked."""
        m = REMIND.search(quoted(ev["message"].get("text", "")))
        if m is None or "reminder_create" not in tools:
            return None
        got = _results(inp, "reminder_create")
        if not got:
            n, unit = int(m.group("n") or 60), (m.group("unit") or "m").lower()
            person = ev["message"].get("author_name") if ev["message"].get("author_kind") == "human" else None
            return TurnOutput(tool_calls=[ToolCall(name="reminder_create", id="remind", arguments={
                "text": clip(m.group("what").strip(" .") or "what you asked", 300),
                "in_minutes": n * 60 if unit.startswith("h") else n, **({"person": person} if person else {})})])
        ok = isinstance(got[0], dict) and got[0].get("id")
        return TurnOutput(text=(f"I will remind you (at {got[0].get('next_at', 'the time you said')}) in our direct "
                                "conversation." if ok else f"I could not set that reminder: {clip(str(got[0]), 200)}"),
                          type="response", state="done")


class Reviewer(Personality):
    def _person(self, ev: dict) -> str:
        m = ev["message"]
        if (m.get("author_kind") == "human") and m.get("author_name"):
            return m["author_name"]
        return ev.get("owner") or (ev.get("people") or ["@" + "owner"])[0]

    def _open_human_asks(self, ev: dict) -> list[dict]:
        return [a for a in ev.get("asked") or [] if a.get("open") and a.get("needs_human")]

    def _verdict(self, ask: dict, answer: str, who: str) -> TurnOutput:
        ok = bool(YES.search(answer)) and not NO.search(answer)
        subject = clip(quoted(ask.get("parent_text") or ask.get("text", "")), 160)
        text = (f"Approved: {who} said “{clip(answer, 200)}”. Go ahead with: {subject}" if ok else
                f"Not approved: {who} said “{clip(answer, 200)}”. Hold off on: {subject}")
        return TurnOutput(text=text, type="response", state="done", in_reply_to=ask.get("parent"),
                          topic=ask.get("parent_topic"), conversation=ask.get("parent_conversation"))

    def on_request(self, inp, ev):
        m = ev["message"]
        if _results(inp, "send_message"):
            return TurnOutput(text=None)  # asked a person; the verdict waits for their answer
        call, files = self.read_files(inp, ev)
        if call:
            return TurnOutput(tool_calls=[call])
        text = quoted(m.get("text", "")) + "".join("\n" + f.get("text", "") for f in files)
        risky = RISKY.findall(text)
        if risky and self.options.get("ask_people", True):
            person = self._person(ev)
            ask = (f"{person}, before I sign off on “{clip(text, 200)}”: it touches "
                   f"{', '.join(sorted({r.lower() for r in risky}))}. Do you approve? Answer yes or no.")
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="ask", arguments={
                "to": [person], "type": "request", "state": "needs_human", "text": ask})])
        words = len(quoted(m.get("text", "")).split())
        notes = [f"scope is clear ({words} words)" if words < 80 else f"long ({words} words): split it up"]
        notes.append("nothing risky (no deploys, deletions, payments or secrets)")
        if "?" in text:
            notes.append("it asks a question: make sure someone owns the answer")
        for f in files:  # what each file sent with it holds
            lines = len(f["text"].splitlines()) if "text" in f else None
            notes.append(f"read {f.get('name')} ({f.get('type')}, {f.get('size')} bytes"
                         + (f", {lines} lines)" if lines is not None else ", binary)"))
        return TurnOutput(text=clip("Reviewed — looks sound: " + "; ".join(notes) + ".", self.length(ev)),
                          type="response", state="done")

    def on_response(self, inp, ev):
        m = ev["message"]
        ask = next((a for a in ev.get("asked_all") or [] if a["id"] == m.get("in_reply_to")), None)
        if ask and ask.get("needs_human"):
            return self._verdict(ask, m.get("text", ""), m.get("author_name") or "a person")
        return TurnOutput(text=None)

    def on_person(self, inp, ev):
        waiting = self._open_human_asks(ev)
        if waiting:
            m = ev["message"]
            return self._verdict(waiting[0], m.get("text", ""), m.get("author_name") or "a person")
        return TurnOutput(text=None)


class Lead(Personality):
    VERBS = {"researcher": "Please find what our notes say about this",
             "reviewer": "Please review this and flag any risk"}

    def team(self, ev: dict) -> list[str]:
        roster = set(ev.get("roster") or [])
        me = ev["me"]["name"]
        return [h for h in self.options.get("team", ["researcher", "reviewer"]) if h in roster and h != me]

    def side(self, ev: dict) -> bool:
        mode = self.options.get("side_topics", "dm")
        return mode == "always" or (mode == "dm" and ev.get("conversation_kind") == "direct")

    def delegate(self, team: list[str], asker: str, title: str, text: str) -> TurnOutput:
        """Asked in a direct conversation: one request to the whole team, written here; the server moves it
        into a side conversation (seed 003 §15), where the team answers, and brings their results back."""
        asks = "; ".join(f"{h}: {self.VERBS.get(h, 'Please help with this').lower()}" for h in team)
        return TurnOutput(tool_calls=[ToolCall(name="send_message", id="ask-team", arguments={
            "to": team, "type": "request", "state": "waiting", "waiting_for": team,
            "title": clip(f"For {asker}: {title}", 80), "text": f"{asks}. For {asker}: “{clip(text, 600)}”"})])

    def on_request(self, inp, ev):
        m = ev["message"]
        if STATUS.search(m.get("text", "")) and "work_graph" in {t.name for t in inp.tools}:
            return self.status(inp)
        team = self.team(ev)
        if not team:
            return TurnOutput(text="Nobody from my team is here to help, so I cannot take this on yet.",
                              type="response", state="done")
        sent = _results(inp, "send_message")
        refused = [r for r in sent if isinstance(r, dict) and r.get("refused")]
        if refused:
            return TurnOutput(text=None)  # the bridge stops the turn on a refusal; nothing more to say
        side = self.side(ev)
        asker = m.get("author_name") or "you"
        title = ev.get("topic", {}).get("title") or clip(m.get("text", ""), 40)
        direct = ev.get("conversation_kind") == "direct"
        i = len(sent) - (1 if side and sent else 0)  # in side mode the first send is the heads-up
        if side and not sent:
            where = "in a side conversation" if direct else "in General"
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="heads-up", arguments={
                "type": "inform", "state": "working", "to": [asker],
                "text": f"On it: I am asking {', '.join(team)} {where} and will answer here."})])
        if side and direct:
            return self.delegate(team, asker, title, m.get("text", "")) if i == 0 else TurnOutput(text=None)
        if i < len(team):
            helper = team[i]
            args: dict[str, Any] = {"to": [helper], "type": "request", "state": "waiting", "waiting_for": team,
                                    "text": f"{self.VERBS.get(helper, 'Please help with this')}, for {asker}: "
                                            f"“{clip(m.get('text', ''), 600)}”"}
            if side:
                first = sent[1] if len(sent) > 1 else None
                if first and first.get("topic"):
                    args["topic"] = first["topic"]
                else:
                    args.update(topic="new", title=clip(f"For {asker}: {title}", 80), conversation="general")
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id=f"ask-{helper}", arguments=args)])
        return TurnOutput(text=None)  # everyone asked: the answer comes when they reply

    def status(self, inp) -> TurnOutput:
        """Asked where things stand: the work graph (seed 003 §49), read with its tool and told in one answer."""
        got = _results(inp, "work_graph")
        if not got:
            return TurnOutput(tool_calls=[ToolCall(name="work_graph", id="graph", arguments={})])
        return TurnOutput(text=graph_summary(got[0]), type="response", state="done")

    def on_response(self, inp, ev):
        m = ev["message"]
        mine = {a["id"]: a for a in ev.get("asked_all") or ev.get("asked") or []}
        ask = mine.get(m.get("in_reply_to"))
        if not ask or not ask.get("parent"):
            return TurnOutput(text=None)
        group = [a for a in mine.values() if a.get("parent") == ask["parent"]]
        if any(a.get("open") for a in group):
            return TurnOutput(text=None)  # still waiting on someone
        side_topic = ask.get("topic") if ask.get("topic") != ask.get("parent_topic") else None
        if side_topic and not _results(inp, "send_message"):
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="close-side", arguments={
                "type": "inform", "state": "done", "topic": side_topic, "conversation": ask.get("conversation"),
                "text": "Thank you both, that is everything I needed. Closing this on my side."})])
        parts = []
        for a in group:
            for who, said in sorted((a.get("answers") or {}).items()):
                parts.append(f"{who}: {clip(said, 300)}")
        text = clip("Here is what the team found. " + " | ".join(parts), self.length(ev))
        follow = self.options.get("follow_up", "reviewer")  # seed 003 §5: a side thread opened with `<dm>`
        if follow and follow in self.team(ev) and ev.get("conversation_kind") in ("general", "group"):
            text += (f'\n<dm target="{follow}">For the record, once this is settled: one check worth doing next '
                     'time?</dm>')
        return TurnOutput(text=text, type="response", state="done", in_reply_to=ask["parent"],
                          topic=ask.get("parent_topic"), conversation=ask.get("parent_conversation"))


    def on_other(self, inp, ev):
        """The answer in a side thread its `<dm>` opened (seed 003 §7): brought back as the thread's summary."""
        m = ev["message"]
        if (ev.get("conversation_kind") != "side" or m.get("type") != "response" or _results(inp, "settle_thread")
                or "settle_thread" not in {t.name for t in inp.tools}):
            return TurnOutput(text=None)
        return TurnOutput(tool_calls=[ToolCall(name="settle_thread", id="settle", arguments={
            "thread": m.get("conversation"), "state": "resolved",
            "summary": clip(f"{m.get('author_name') or 'the answer'}: {m.get('text', '')}", 300)})])


class Eager(Personality):
    def on_request(self, inp, ev):
        m = ev["message"]
        sent = _results(inp, "send_message")
        if len(sent) == 0:
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="status-1", arguments={
                "type": "inform", "state": "working", "text": f"On it! Looking into “{clip(m.get('text', ''), 80)}” "
                                                             "right now, I will keep you posted."})])
        if len(sent) == 1:
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="status-2", arguments={
                "type": "inform", "state": "working",
                "text": "Still digging: I found several relevant notes and I am reading every one of them."})])
        found = [s for _, s in corpus.search(m.get("text", ""), self.corpus_path, k=4)] or list(corpus.load(self.corpus_path)[:3])
        body = "\n\n".join(f"{s.title}. {s.text}" for s in found)
        return TurnOutput(text=f"Here is everything I could find, in full:\n\n{body}", type="response", state="done")


class Ops(Personality):
    """Deploys what it is asked to (its `deploy` tool, which the bridge submits to approvals first: seed 003 §61),
    then says what came of it."""

    def on_request(self, inp, ev):
        m = ev["message"]
        done = _results(inp, "deploy")
        if not done:
            found = re.search(r"\bdeploy\w*\s+(?:to\s+)?([\w.-]+)", m.get("text", ""), re.I)
            if found is None:
                return TurnOutput(text="Say what to deploy, and where (e.g. \"deploy staging\").", type="response",
                                  state="done")
            return TurnOutput(tool_calls=[ToolCall(name="deploy", id="deploy", arguments={"target": found.group(1)})])
        return TurnOutput(text=clip(str(done[-1]), 300), type="response", state="done")


PERSONALITIES: dict[str, Callable[[dict, str | None], Personality]] = {
    "researcher": Researcher, "reviewer": Reviewer, "lead": Lead, "eager": Eager, "ops": Ops, "plain": Personality,
}


class BuiltinBackend(Backend):
    name = "builtin"
    native_tools = True

    def __init__(self, personality: str = "researcher", options: dict | None = None, corpus_path: str | None = None):
        if personality not in PERSONALITIES:
            raise ValueError(f"builtin personality {personality!r}: one of {', '.join(PERSONALITIES)}")
        self.personality = PERSONALITIES[personality](options or {}, corpus_path)
        self.calls = 0

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.calls += 1
        try:
            return self.personality.turn(inp)
        except Exception as e:  # a bug here is a failed turn, not a dead bridge
            return TurnOutput(error=f"builtin: {type(e).__name__}: {e}")
