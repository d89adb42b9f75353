"""The writer's own tests: its loop over a fake store (test_loop.py)."""

from ygg_server.writer import batch as batch_module


def decide_fails_on(monkeypatch, text: str) -> None:
    """Make the core raise while deciding a post whose text is `text` (the writer must answer it with the error)."""
    real = batch_module.decide

    def failing(view, post, now):
        if post.text == text:
            raise RuntimeError(text)
        return real(view, post, now)

    monkeypatch.setattr(batch_module, "decide", failing)


def rendered(cmd, answer):
    """A writer's answer to `cmd` as the gateway words it (`replies.render`, with the command frame's ref; an ack's
    ref is its third argument); an error or None as it is."""
    from ygg_server.protocol import replies, results

    if not isinstance(answer, results.Result.__args__):
        return answer
    ref = cmd.args[2] if cmd.kind == "ack" else getattr(cmd.args[1], "ref", None)
    return replies.render(ref, answer)
