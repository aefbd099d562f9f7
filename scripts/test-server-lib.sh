# Shared by scripts/pulse-test-server.sh and scripts/pipewire-test-server.sh (sourced, not run):
# messages, folders, and ending the daemons they started. The sourcing script sets `name`.

die() { echo "$name: $*" >&2; exit 1; }
usage() { sed -n '/^# Usage:/,/^#$/{/^#   /s/^# *//p}' "$0" >&2; exit 2; }

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd -P); }

# Running and not a zombie (a daemon whose parent is gone waits for init to reap it).
alive() {
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
  local st
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null || true)
  [ "$st" != Z ] && [ "$st" != X ]
}

# Ends a PID that we started: TERM (CONT first: a test may have stopped it), wait up to $2
# seconds, then KILL.
end_pid() {
  local pid=$1 wait_s=${2:-5} i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true
  for ((i = 0; i < wait_s * 20; i++)); do alive "$pid" || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do alive "$pid" || return 0; sleep 0.05; done
}

# Runs "${@:2}" as a client of the server in DIR ($1).
client_env() {
  local dir=$1
  env ALSA_CONFIG_PATH="/usr/share/alsa/alsa.conf:$dir/asoundrc" \
      PULSE_SERVER="unix:$dir/pulse.sock" PULSE_CLIENTCONFIG="$dir/client.conf" \
      PULSE_COOKIE="$dir/cookie" "${@:2}"
}
