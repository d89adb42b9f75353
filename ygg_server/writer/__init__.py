"""The one writer: Load -> Decide -> Apply -> Publish over the Store port (store/port.py).

`loop.Writer` runs a batch over any store; `batch.Batch` decides one (pure); `plan` names the rows it
reads. Where the loop runs: `runners.ThreadRunner` (SQLite, beside the event loop),
`process.WriterProcess` (SQLite, in a child process: `ygg-server serve`'s and `ygg --local`'s
default) or `runners.TaskRunner` (PostgreSQL, a task on the event loop). `ygg_server.compose`
puts a store and a runner together.
"""

from .loop import Published, Writer
from .runners import TaskRunner, ThreadRunner

__all__ = ["Published", "Writer", "ThreadRunner", "TaskRunner"]
