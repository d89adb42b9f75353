#!/usr/bin/env bash
# Drive the real `ygg` in tmux against a real `ygg-server serve`: sign in, type a message with
# send-keys, read it back with capture-pane. Exit 0 when the message shows on the screen.
#   tests/tui/tmux_drive.sh            (needs tmux; tests/tui/test_tmux.py runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.venv/bin"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ygg-tmux.XXXXXX")"
session="ygg-drive-$$"
pw="pw-tmux-drive"
unset COLUMNS LINES  # a caller's (pytest's) terminal size must not size the TUI inside tmux
export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data"  # never the user's own config or token

cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

source "$root/tests/tui/tmux_lib.sh"  # wait_for

"$bin/ygg-server" admin --data-dir "$tmp/server" add-person alice --password "$pw" >/dev/null
"$bin/ygg-server" admin --data-dir "$tmp/server" add-workspace team --owner alice >/dev/null
port="$("$bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin/ygg-server" serve --data-dir "$tmp/server" --port "$port" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do grep -q listening "$tmp/server.log" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$tmp/server.log" || { cat "$tmp/server.log" >&2; exit 1; }

tmux new-session -d -s "$session" -x 150 -y 40 \
  "env -u COLUMNS -u LINES $bin/ygg --url ws://127.0.0.1:$port/ --handle alice --password $pw --workspace team; sleep 5"
wait_for 30 "@alice · team · connected"
wait_for 10 "Write… @name first addresses"
sleep 1  # let the first paint settle before typing
tmux send-keys -t "$session" -l "hello from tmux"
wait_for 10 "hello from tmux"
tmux send-keys -t "$session" Enter
wait_for 10 "New topic: what is it about?"
tmux send-keys -t "$session" C-u
sleep 0.3
tmux send-keys -t "$session" -l "Tmux drive"
sleep 0.3
tmux send-keys -t "$session" Enter
wait_for 10 "team › General › Tmux drive"
wait_for 10 "hello from tmux"
tmux capture-pane -p -t "$session"
tmux send-keys -t "$session" C-q
echo "ok: typed in tmux, read back from the screen"
