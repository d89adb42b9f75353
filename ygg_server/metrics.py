"""What the server counts for Prometheus (`/metrics`, net/http.py), cheaply.

The hot path only adds to plain integers and lists on the event loop's thread (no lock, no label lookup, no
prometheus_client object per message); `families` turns them into metric families when scraped, so the
prometheus-client package is needed only when /metrics is turned on (`ygg[metrics]`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass(slots=True)
class Histogram:
    """A Prometheus histogram's state: one count per bucket (not cumulative until rendered), the sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, v: float) -> None:
        self.counts[bisect_left(self.bounds, v)] += 1
        self.total += v

    def buckets(self) -> list[tuple[str, int]]:
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts):
            running += n
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


@dataclass(slots=True)
class Metrics:
    connections_opened: int = 0
    messages: int = 0  # stored (every message a committed batch published)
    deliveries: int = 0  # made (rows of deliveries a committed batch published)
    sent: int = 0  # `sent` answers
    refusals: Counter = field(default_factory=Counter)  # refusal reason -> `refused` answers
    errors: Counter = field(default_factory=Counter)  # error code -> `error` answers
    batch_messages: Histogram = field(default_factory=lambda: Histogram(BATCH_BUCKETS))
    commit_seconds: Histogram = field(default_factory=lambda: Histogram(LATENCY_BUCKETS))

    def published(self, messages: int, deliveries: int) -> None:
        self.messages += messages
        self.deliveries += deliveries
        self.batch_messages.observe(messages)

    def answered(self, reply: dict) -> None:
        op = reply.get("op")
        if op == "sent":
            self.sent += 1
        elif op == "refused":
            self.refusals[str(reply.get("reason"))] += 1
        elif op == "error":
            self.errors[str(reply.get("code"))] += 1


def families(m: Metrics, gauges: dict[str, tuple[str, float]]):
    """The metric families to expose: `m`'s counters and histograms, and `gauges` read at scrape time
    (name -> (help, value))."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    for name, help_, value in (
            ("ygg_connections_opened", "WebSocket connections opened", m.connections_opened),
            ("ygg_messages_stored", "messages stored (committed)", m.messages),
            ("ygg_deliveries_made", "deliveries made (committed)", m.deliveries),
            ("ygg_sends_answered_sent", "sends answered `sent`", m.sent)):
        yield CounterMetricFamily(name, help_, value=value)
    refused = CounterMetricFamily("ygg_refusals", "frames answered `refused`, by reason", labels=["reason"])
    for reason, n in sorted(m.refusals.items()):
        refused.add_metric([reason], n)
    yield refused
    errors = CounterMetricFamily("ygg_errors", "frames answered `error`, by code", labels=["code"])
    for code, n in sorted(m.errors.items()):
        errors.add_metric([code], n)
    yield errors
    for name, help_, h in (
            ("ygg_batch_messages", "messages stored per committed batch", m.batch_messages),
            ("ygg_commit_seconds", "a pipelined frame's (send, ack) time from read to its commit answered",
             m.commit_seconds)):
        yield HistogramMetricFamily(name, help_, buckets=h.buckets(), sum_value=h.total)
    for name, (help_, value) in gauges.items():
        yield GaugeMetricFamily(name, help_, value=value)


def render(m: Metrics, gauges: dict[str, tuple[str, float]]) -> tuple[bytes, str]:
    """The exposition text and its content type."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    class _Collector:
        def collect(self):
            return families(m, gauges)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector())
    return generate_latest(registry), CONTENT_TYPE_LATEST

