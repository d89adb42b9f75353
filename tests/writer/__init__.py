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
