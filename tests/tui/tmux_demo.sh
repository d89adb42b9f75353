#!/usr/bin/env bash
# Drive the real demo (`ygg --local`, what ./run starts) in tmux at 80x24, as a new user would: answer the reviewer's
# needs_human question (esc, h, "yes", ctrl+d for done, Enter), switch with ctrl+k, show people and credits (p),
# hide the list (ctrl+b), step with alt+↓, every topic at once (T), the work graph (w), a message sent then taken
# back (ctrl+z). Exit 0 when each step shows on the screen.
#   tests/tui/tmux_demo.sh            (needs tmux; tests/tui/test_tmux.py runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.venv/bin"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ygg-tmux-demo.XXXXXX")"
session="ygg-demo-$$"
unset COLUMNS LINES
export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" YGG_DATA_DIR="$tmp/ygg"  # never the user's own

cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

source "$root/tests/tui/tmux_lib.sh"  # wait_for, wait_gone
keys() { tmux send-keys -t "$session" "$@"; sleep 0.4; }

tmux new-session -d -s "$session" -x 80 -y 24 "env -u COLUMNS -u LINES $bin/ygg --local; sleep 5"
wait_for 60 "connected to 127.0.0.1:"         # the header names the server (./run's port is random)
wait_for 90 "1 waiting on a person"            # the reviewer asks before deploying
keys Escape
wait_for 5 "keys are commands"                 # the screen says where the keys go
keys h
wait_for 10 "response to reviewer"            # h: the composer answers the question, and says so
tmux send-keys -t "$session" -l "yes, go ahead"
keys C-d
wait_for 5 "✓ done"                            # one key: my part is done
keys Enter
wait_for 30 "Approved: @root said"
wait_for 5 "request to everyone in the topic"  # the next message starts from the defaults
keys C-k
tmux send-keys -t "$session" -l "lead"
sleep 1
keys Enter
wait_for 10 "Demo › lead"                      # ctrl+k switched conversations
keys Escape
sleep 0.5  # (ESC and a letter together are alt+letter)
keys p
wait_for 5 "People and agents"                 # at 80 columns, in the list's place
keys p C-b
keys M-Down
wait_for 10 "Demo › side:"                     # alt+↓: the next conversation, the side one under lead
keys C-b
keys M-2
wait_for 10 "Demo › General"                   # alt+2 from tmux
keys Escape
sleep 0.5
keys T
wait_for 10 "Topics of General"                # T: every topic of the conversation at once
wait_for 5 "Deploy to production"
keys Enter                                     # opens the one highlighted
wait_gone 10 "Topics of General"
keys w
wait_for 10 "Work graph of Demo"               # w: how the work connects (seed 003 §49)
wait_for 10 "Deploy to production"
keys Escape
wait_gone 10 "Work graph of Demo"
keys i
wait_for 5 "✎ writing"
tmux send-keys -t "$session" -l "a typo, sent too soon"
keys Enter
wait_for 10 "ctrl+z takes it back"             # the offer, under the composer
keys C-z
wait_for 10 "Taken back: deleted for everyone"  # gone, and its text back in the composer
wait_for 5 "a typo, sent too soon"
tmux capture-pane -p -t "$session"
keys C-q
echo "ok: the demo driven at 80x24, read back from the screen"
