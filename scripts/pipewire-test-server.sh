#!/usr/bin/env bash
# A private PipeWire server with its pulse server, for testing live playback (the native pulse
# output and ALSA's pulse plugin) against PipeWire on a machine with no sound card. The same
# interface and the same DIR/env as scripts/pulse-test-server.sh, so the harness can start
# either (NARRATOR_TEST_SOUND_SERVER=pipewire, Sources/NarratorTestSupport/PulseTestServer.swift).
#
# Three daemons, all with this DIR's runtime dir, config and state, no D-Bus, no devices:
#   pipewire        the graph: the Dummy-Driver (a timer on CLOCK_MONOTONIC) drives it, and its
#                   only sink is module-pipe-tunnel (tunnel.mode = sink), which writes exactly
#                   what it played into a FIFO, silence too while nothing plays
#   pipewire-pulse  the PulseAudio protocol on DIR/pulse.sock (clients' PULSE_SERVER)
#   wireplumber     the session manager: without one, nothing links a client's stream to the
#                   sink. Only its default-nodes, access and linking policy run (no ALSA, V4L2,
#                   libcamera or Bluetooth monitors, no portal, nothing stored in $HOME)
#
# Debian packages (apt-get install -y --no-install-recommends ...):
#   pipewire pipewire-pulse wireplumber   the daemons (pipewire-bin comes with them)
#   pulseaudio-utils    pactl (readiness check); libasound2-plugins (ALSA's `pulse` PCM)
#   python3             scripts/fifo-recorder.py (the `record` command)
#
# Usage:
#   scripts/pipewire-test-server.sh start DIR [RATE] [CHANNELS]   (defaults 48000 2; 1 or 2 channels)
#   scripts/pipewire-test-server.sh record DIR OUT.raw [OUT.times.tsv] [-- recorder options]
#   scripts/pipewire-test-server.sh stop DIR
#   scripts/pipewire-test-server.sh status DIR
#
# `start` returns once the pulse server answers, its default sink is the pipe sink and the
# session manager has chosen it, leaving what pulse-test-server.sh leaves (DIR/env, DIR/asoundrc,
# DIR/sink.fifo, DIR/pid) with these differences:
#   DIR/pid          pipewire-pulse's PID: the server the clients talk to (the tests stop and
#                    kill it as "the server"); DIR/pids all three, for `stop`
#   DIR/pipewire.log, DIR/pipewire-pulse.log, DIR/wireplumber.log   the daemons' logs
#   NARRATOR_PULSE_SERVER=pipewire in DIR/env
# The graph runs at RATE only (default.clock.allowed-rates), so a RATE stream is not resampled;
# the sink's blocks are the graph's quantum (1024 frames idle, down to what the playing streams
# ask for). `record` is pulse-test-server.sh's (the FIFO and DIR/env are the same).
#
# Environment: PULSE_TEST_TIMEOUT  seconds `start` waits for the servers (default 15)
#              PIPEWIRE_TEST_DEBUG PIPEWIRE_DEBUG / WIREPLUMBER_DEBUG level for the logs (default 2)

set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout_s=${PULSE_TEST_TIMEOUT:-15}
debug=${PIPEWIRE_TEST_DEBUG:-2}
quantum=${PIPEWIRE_TEST_QUANTUM:-512}
sink_name=narrator_test

name=pipewire-test-server
# shellcheck source=scripts/test-server-lib.sh
. "$here/test-server-lib.sh"

# Is PID one of the daemons we started for DIR? (guards against a reused PID)
is_our_daemon() {
  local pid=$1 dir=$2 exe
  alive "$pid" || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  [ "$exe" = "$(readlink -f "$(command -v pipewire)")" ] ||
    [ "$exe" = "$(readlink -f "$(command -v wireplumber)")" ] || return 1
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "PULSE_RUNTIME_PATH=$dir/runtime"
}

# The daemons' environment: nothing of the caller's session (no bus, no X, no user dirs).
daemon_vars() {
  local dir=$1
  daemon_env=(PATH="/usr/sbin:/usr/bin:/sbin:/bin" LANG=C
    HOME="$dir" XDG_RUNTIME_DIR="$dir/runtime" XDG_CONFIG_HOME="$dir/config"
    XDG_STATE_HOME="$dir/state" XDG_DATA_HOME="$dir/state" PULSE_RUNTIME_PATH="$dir/runtime"
    PULSE_STATE_PATH="$dir/state" DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/no-bus"
    DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/no-bus" DISABLE_RTKIT=1
    PIPEWIRE_DEBUG="$debug" WIREPLUMBER_DEBUG="$debug")
}

write_configs() {
  local dir=$1 rate=$2 channels=$3 position quantum=$quantum
  case $channels in
    1) position="[ MONO ]" ;;
    2) position="[ FL FR ]" ;;
  esac
  mkdir -p "$dir/config/wireplumber/main.lua.d"
  cat >"$dir/pipewire.conf" <<EOF
# Written by scripts/pipewire-test-server.sh: the graph, driven by the system clock, whose
# only sink writes what it plays into $dir/sink.fifo.
context.properties = {
    core.daemon = true
    core.name = pipewire-0
    default.clock.rate = $rate
    default.clock.allowed-rates = [ $rate ]
    default.clock.quantum = $quantum
    default.clock.min-quantum = $quantum
    default.clock.max-quantum = $quantum
    link.max-buffers = 16
    mem.allow-mlock = false
    support.dbus = false
}
context.spa-libs = {
    audio.convert.* = audioconvert/libspa-audioconvert
    support.*       = support/libspa-support
}
context.modules = [
    # Real-time data threads (SCHED_FIFO directly as root, else through RTKit if it answers):
    # a cycle that does not finish in time is skipped, and the FIFO loses a quantum of time.
    { name = libpipewire-module-rt
      args = { nice.level = -11 rt.prio = 88 }
      flags = [ ifexists nofail ] }
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-profiler }
    { name = libpipewire-module-metadata }
    { name = libpipewire-module-spa-node-factory }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-access }
    { name = libpipewire-module-adapter }
    { name = libpipewire-module-link-factory }
    { name = libpipewire-module-session-manager }
    { name = libpipewire-module-pipe-tunnel
      args = {
        tunnel.mode = sink
        pipe.filename = "$dir/sink.fifo"
        audio.format = S16LE
        audio.rate = $rate
        audio.channels = $channels
        audio.position = $position
        stream.props = {
          node.name = $sink_name
          node.description = "Narrator test pipe sink"
          priority.session = 2000
          session.suspend-timeout-seconds = 0
          node.pause-on-idle = false
          node.always-process = true
        }
      }
    }
]
context.objects = [
    { factory = spa-node-factory
      args = {
        factory.name    = support.node.driver
        node.name       = Dummy-Driver
        node.group      = pipewire.dummy
        priority.driver = 20000
      }
    }
]
EOF
  cat >"$dir/pipewire-pulse.conf" <<EOF
# Written by scripts/pipewire-test-server.sh: the pulse server on $dir/pulse.sock.
context.properties = { mem.allow-mlock = false
    support.dbus = false }
context.spa-libs = {
    audio.convert.* = audioconvert/libspa-audioconvert
    support.*       = support/libspa-support
}
context.modules = [
    { name = libpipewire-module-rt
      args = { nice.level = -11 rt.prio = 88 }
      flags = [ ifexists nofail ] }
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-adapter }
    { name = libpipewire-module-metadata }
    { name = libpipewire-module-protocol-pulse
      args = {
        server.address = [ "unix:$dir/pulse.sock" ]
      }
    }
]
EOF
  cat >"$dir/config/wireplumber/wireplumber.conf" <<'EOF'
# Written by scripts/pipewire-test-server.sh: the session manager without Bluetooth (D-Bus).
context.properties = {
  log.level = 2
  wireplumber.script-engine = lua-scripting
}
context.spa-libs = {
  audio.convert.* = audioconvert/libspa-audioconvert
  support.*       = support/libspa-support
}
context.modules = [
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-client-node }
  { name = libpipewire-module-client-device }
  { name = libpipewire-module-adapter }
  { name = libpipewire-module-metadata }
  { name = libpipewire-module-session-manager }
]
wireplumber.components = [
  { name = libwireplumber-module-lua-scripting, type = module }
  { name = main.lua, type = config/lua }
  { name = policy.lua, type = config/lua }
]
EOF
  # Replaces the packaged main.lua.d/90-enable-all.lua (same name, earlier in the search path):
  # no device monitors, no portal, no suspending of idle nodes, nothing stored.
  cat >"$dir/config/wireplumber/main.lua.d/90-enable-all.lua" <<'EOF'
-- Written by scripts/pipewire-test-server.sh.
load_module("metadata")
default_access.properties["enable-flatpak-portal"] = false
default_access.enable()
device_defaults.properties["use-persistent-storage"] = false
device_defaults.enable()
stream_defaults.properties["restore-props"] = false
stream_defaults.properties["restore-target"] = false
stream_defaults.enable()
EOF
}

# Starts one daemon in the background; $launched is its PID (the subshell execs it).
# Only stdin, stdout and stderr go with it: the daemons keep every descriptor they inherit, and
# a caller that learns of its child's end from a descriptor closing (Foundation's Process on
# Linux does) would otherwise wait for the daemons too.
launch() {
  local dir=$1 log=$2
  daemon_vars "$dir"
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
    done
    exec env -i "${daemon_env[@]}" "${@:3}"
  ) </dev/null >"$dir/$log" 2>&1 &
  launched=$!
}

stop_all() {
  local dir=$1 pid
  [ -f "$dir/pids" ] || return 0
  # The session manager and the pulse server first, the graph (and so the FIFO) last.
  for pid in $(tac "$dir/pids"); do
    if is_our_daemon "$pid" "$dir"; then end_pid "$pid" 5; fi
  done
}

cmd_start() {
  [ $# -ge 1 ] && [ $# -le 3 ] || usage
  local dir rate=${2:-48000} channels=${3:-2}
  [[ $rate =~ ^[0-9]+$ && $channels =~ ^[0-9]+$ ]] || die "RATE and CHANNELS must be integers"
  ((rate >= 8000 && rate <= 384000)) || die "RATE must be 8000..384000"
  [ "$channels" = 1 ] || [ "$channels" = 2 ] || die "CHANNELS must be 1 or 2"
  local tool
  for tool in pipewire wireplumber; do
    command -v $tool >/dev/null || die "$tool not found (apt-get install pipewire pipewire-pulse wireplumber)"
  done
  [ -e /usr/lib/x86_64-linux-gnu/pipewire-0.3/libpipewire-module-protocol-pulse.so ] ||
    compgen -G '/usr/lib/*/pipewire-0.3/libpipewire-module-protocol-pulse.so' >/dev/null ||
    die "PipeWire's pulse module not found (apt-get install pipewire-pulse)"
  command -v pactl >/dev/null || die "pactl not found (apt-get install pulseaudio-utils)"
  command -v pw-metadata >/dev/null || die "pw-metadata not found (apt-get install pipewire-bin)"
  compgen -G '/usr/lib/*/alsa-lib/libasound_module_pcm_pulse.so' >/dev/null ||
    die "ALSA pulse plugin not found (apt-get install libasound2-plugins)"

  dir=$(abs_dir "$1")
  [ ${#dir} -le 90 ] || die "DIR path too long for a unix socket: $dir"
  # It goes into config strings, quoted, and module arguments.
  [[ $dir =~ ^[A-Za-z0-9_./+-]+$ ]] || die "DIR path must be plain (no spaces or quotes): $dir"
  if [ -f "$dir/pid" ] && is_our_daemon "$(cat "$dir/pid")" "$dir"; then
    die "a server already runs for $dir (pid $(cat "$dir/pid")): stop it first"
  fi
  chmod 700 "$dir"
  rm -f "$dir/pid" "$dir/pids" "$dir/pulse.sock" "$dir/sink.fifo" "$dir/env" "$dir/recorder.pid" \
        "$dir/recorder.ready"
  rm -rf "$dir/runtime"
  mkdir -p "$dir/runtime" "$dir/state"
  chmod 700 "$dir/runtime"
  # The pipe tunnel would make it, but then it must exist before the recorder opens it anyway.
  mkfifo -m 600 "$dir/sink.fifo"

  printf 'autospawn = no\ncookie-file = %s/cookie\n' "$dir" >"$dir/client.conf"
  cat >"$dir/asoundrc" <<EOF
# Written by scripts/pipewire-test-server.sh. Read after /usr/share/alsa/alsa.conf through
# ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$dir/asoundrc
pcm.!default { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
ctl.!default { type pulse server "unix:$dir/pulse.sock" }
pcm.!pulse { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
ctl.!pulse { type pulse server "unix:$dir/pulse.sock" }
pcm.$sink_name { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
EOF
  write_configs "$dir" "$rate" "$channels"

  local deadline=$(($(date +%s%N) + timeout_s * 1000000000)) ok= graph pulse session
  launch "$dir" pipewire.log pipewire -c "$dir/pipewire.conf"
  graph=$launched
  echo "$graph" >"$dir/pids"
  # The graph's socket first: the others connect to it once, at start.
  while (($(date +%s%N) < deadline)) && alive "$graph" && [ ! -S "$dir/runtime/pipewire-0" ]; do sleep 0.05; done
  if [ -S "$dir/runtime/pipewire-0" ]; then
    launch "$dir" pipewire-pulse.log pipewire -c "$dir/pipewire-pulse.conf"
    pulse=$launched
    echo "$pulse" >>"$dir/pids"
    echo "$pulse" >"$dir/pid"
    launch "$dir" wireplumber.log wireplumber
    session=$launched
    echo "$session" >>"$dir/pids"
    while (($(date +%s%N) < deadline)); do
      alive "$graph" && alive "$pulse" && alive "$session" || break
      # The session manager has picked the sink (its default-nodes module), and the pulse
      # server reports it as the default.
      if [ -S "$dir/pulse.sock" ] &&
         env -i "${daemon_env[@]}" timeout 2 pw-metadata -n default 0 default.audio.sink 2>/dev/null |
           grep -qF "\"name\":\"$sink_name\"" &&
         client_env "$dir" timeout 2 pactl set-default-sink "$sink_name" 2>/dev/null &&
         [ "$(client_env "$dir" timeout 2 pactl get-default-sink 2>/dev/null)" = "$sink_name" ]; then
        ok=1; break
      fi
      sleep 0.1
    done
  fi
  if [ -z "$ok" ]; then
    stop_all "$dir"
    rm -f "$dir/pid" "$dir/pids"
    echo "pipewire-test-server: servers did not come up (waited up to ${timeout_s} s); log tails:" >&2
    local log
    for log in pipewire.log pipewire-pulse.log wireplumber.log; do
      [ -f "$dir/$log" ] && { echo "--- $log" >&2; tail -n 15 "$dir/$log" >&2 || true; }
    done
    exit 1
  fi

  cat >"$dir/env" <<EOF
export ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$dir/asoundrc
export PULSE_SERVER=unix:$dir/pulse.sock
export PULSE_CLIENTCONFIG=$dir/client.conf
export PULSE_COOKIE=$dir/cookie
export NARRATOR_PULSE_DIR=$dir
export NARRATOR_PULSE_FIFO=$dir/sink.fifo
export NARRATOR_PULSE_RATE=$rate
export NARRATOR_PULSE_CHANNELS=$channels
export NARRATOR_PULSE_PID=$pulse
export NARRATOR_PULSE_SERVER=pipewire
EOF
  echo "$dir/env"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  local dir pid
  [ -d "$1" ] || return 0
  dir=$(cd "$1" && pwd -P)
  stop_all "$dir"
  if [ -f "$dir/recorder.pid" ]; then
    pid=$(cat "$dir/recorder.pid")
    # The recorder exits on EOF once the graph is gone; end it only if it is still ours.
    if alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/sink.fifo"; then
      end_pid "$pid" 2
    fi
  fi
  rm -f "$dir/pid" "$dir/pids" "$dir/recorder.pid" "$dir/recorder.ready" "$dir/pulse.sock" \
        "$dir/pulse.sock.lock" "$dir/sink.fifo" "$dir/env"
  rm -rf "$dir/runtime"
}

cmd_status() {
  [ $# -eq 1 ] || usage
  local dir pid up=
  dir=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  if [ -f "$dir/pids" ]; then
    for pid in $(cat "$dir/pids"); do
      if is_our_daemon "$pid" "$dir"; then
        up=1; echo "running: $(tr '\0' ' ' <"/proc/$pid/cmdline") (pid $pid)"
      fi
    done
  fi
  [ -n "$up" ] || { echo "not running"; return 1; }
  client_env "$dir" timeout 2 pactl list short sinks || true
}

[ $# -ge 1 ] || usage
sub=$1; shift
case $sub in
  start) cmd_start "$@" ;;
  # The FIFO and DIR/env are pulse-test-server.sh's: so is the recorder.
  record) exec bash "$here/pulse-test-server.sh" record "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  *) usage ;;
esac
