# Shared by tmux_drive.sh and tmux_demo.sh (sourced): wait until the pane of tmux session $session shows a text.

wait_for() {  # wait_for SECONDS TEXT: until the pane shows TEXT
  local until=$((SECONDS + $1))
  while [ $SECONDS -lt $until ]; do
    if tmux capture-pane -p -t "$session" | grep -qF -- "$2"; then return 0; fi
    sleep 0.2
  done
  echo "timed out waiting for: $2" >&2
  tmux capture-pane -p -t "$session" >&2 || true
  return 1
}

wait_gone() {  # wait_gone SECONDS TEXT: until the pane no longer shows TEXT (a dialog closed)
  local until=$((SECONDS + $1))
  while [ $SECONDS -lt $until ]; do
    if ! tmux capture-pane -p -t "$session" | grep -qF -- "$2"; then return 0; fi
    sleep 0.2
  done
  echo "still showing: $2" >&2
  tmux capture-pane -p -t "$session" >&2 || true
  return 1
}
