#!/usr/bin/env bash
# A private PulseAudio server for testing live ALSA playback on a machine with no sound card.
#
# Real libasound → ALSA's `pulse` PCM (libasound2-plugins) → this server → module-pipe-sink,
# which renders in real time on the system clock (use_system_clock_for_timing=yes) and writes
# exactly what it played, bit for bit, into a FIFO. Nothing touches /dev/snd, the user's own
# PulseAudio/PipeWire, D-Bus or $HOME: everything lives in DIR.
#
# Debian packages (apt-get install -y --no-install-recommends ...):
#   pulseaudio          the daemon (its postinst leaves no system-wide daemon running)
#   pulseaudio-utils    pactl (readiness check)
#   libasound2-plugins  ALSA's `pulse` PCM/CTL plugin
#   alsa-utils          aplay (only for manual checks)
#   python3             scripts/fifo-recorder.py (the `record` command)
#
# Usage:
#   scripts/pulse-test-server.sh start DIR [RATE] [CHANNELS]   (defaults 48000 2)
#   scripts/pulse-test-server.sh record DIR OUT.raw [OUT.times.tsv] [-- recorder options]
#   scripts/pulse-test-server.sh stop DIR
#   scripts/pulse-test-server.sh status DIR
#
# `start` returns once the server answers and its default sink is the pipe sink, leaving:
#   DIR/env          `source` it (or set the same variables) in every ALSA client:
#                      ALSA_CONFIG_PATH   /usr/share/alsa/alsa.conf:DIR/asoundrc
#                      PULSE_SERVER       unix:DIR/pulse.sock
#                      PULSE_CLIENTCONFIG DIR/client.conf (autospawn = no)
#                      PULSE_COOKIE       DIR/cookie (else clients create ~/.config/pulse/cookie)
#                    plus NARRATOR_PULSE_{DIR,FIFO,RATE,CHANNELS,PID} for the tests themselves.
#                    ALSA_CONFIG_PATH is what matters (the devices name the server). libasound
#                    1.2.8 re-reads it at every snd_pcm_open, so even a setenv() inside a running
#                    test process takes effect for the next open.
#   DIR/asoundrc     ALSA devices: `default` and `pulse` go to this server; `narrator_test`
#                    is the same sink by name. Each names the server explicitly, so a client
#                    that only has ALSA_CONFIG_PATH still lands here and never autospawns.
#   DIR/sink.fifo    the pipe sink's output: s16le, RATE Hz, CHANNELS interleaved
#   DIR/pid          the daemon's PID; DIR/pulse.log its log (new at each start)
#
# Someone MUST read DIR/sink.fifo from before anything plays until it has finished (use
# `record`, which runs scripts/fifo-recorder.py in the foreground: run it in the background
# and wait for DIR/recorder.ready). The sink keeps real-time pace with or without a reader,
# but with none the pipe fills (64 KiB, ~341 ms at 48 kHz stereo) and from then on everything
# rendered is DROPPED; what stays in the pipe is the oldest data, stale by the time anyone reads
# it (the recorder discards it). The sink renders silence while nothing plays and writes one
# block per wake-up (1023 frames, ~21.3 ms, shrinking to a stream's requested latency), at
# most one block ahead of real time, so the recording is a continuous real-time clock. Where
# SCHED_FIFO is permitted, the recorder reads at SCHED_FIFO 30, above narrator's own real-time
# threads (20 and below): the clock is fitted to the reads' times, and a ruler that narrator's threads delay moves
# (by 1.5 frames on average, measured with them at SCHED_FIFO and the recorder normal).
#
# `stop` ends the daemon (TERM, then KILL after 5 s) and any recorder started by `record`
# (it also ends by itself on EOF), then removes the socket and FIFO; logs and recordings stay.
#
# Environment: PULSE_TEST_TIMEOUT  seconds `start` waits for the server (default 15)
#              PULSE_TEST_LOG_LEVEL daemon log level: error warn notice info debug (default info)

set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout_s=${PULSE_TEST_TIMEOUT:-15}
log_level=${PULSE_TEST_LOG_LEVEL:-info}
sink_name=narrator_test

name=pulse-test-server
# shellcheck source=scripts/test-server-lib.sh
. "$here/test-server-lib.sh"

# Is PID the pulseaudio we started for DIR? (guards against a reused PID)
is_our_daemon() {
  local pid=$1 dir=$2
  alive "$pid" || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null || true)" = "$(command -v pulseaudio)" ] || return 1
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "PULSE_RUNTIME_PATH=$dir/runtime"
}

cmd_start() {
  [ $# -ge 1 ] && [ $# -le 3 ] || usage
  local dir rate=${2:-48000} channels=${3:-2}
  [[ $rate =~ ^[0-9]+$ && $channels =~ ^[0-9]+$ ]] || die "RATE and CHANNELS must be integers"
  command -v pulseaudio >/dev/null || die "pulseaudio not found (apt-get install pulseaudio)"
  command -v pactl >/dev/null || die "pactl not found (apt-get install pulseaudio-utils)"
  [ -e /usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so ] ||
    compgen -G '/usr/lib/*/alsa-lib/libasound_module_pcm_pulse.so' >/dev/null ||
    die "ALSA pulse plugin not found (apt-get install libasound2-plugins)"

  dir=$(abs_dir "$1")
  # sun_path holds 108 bytes.
  [ ${#dir} -le 90 ] || die "DIR path too long for a unix socket: $dir"
  # It goes unquoted into module arguments and quoted into ALSA config strings.
  [[ $dir =~ ^[A-Za-z0-9_./+-]+$ ]] || die "DIR path must be plain (no spaces or quotes): $dir"
  if [ -f "$dir/pid" ] && is_our_daemon "$(cat "$dir/pid")" "$dir"; then
    die "a server already runs for $dir (pid $(cat "$dir/pid")): stop it first"
  fi
  chmod 700 "$dir"
  rm -f "$dir/pid" "$dir/pulse.sock" "$dir/sink.fifo" "$dir/env" "$dir/recorder.pid" \
        "$dir/recorder.ready"
  mkdir -p "$dir/runtime" "$dir/state" "$dir/config/pulse"
  chmod 700 "$dir/runtime"

  printf 'autospawn = no\ncookie-file = %s/cookie\n' "$dir" >"$dir/client.conf"
  cat >"$dir/asoundrc" <<EOF
# Written by scripts/pulse-test-server.sh. Read after /usr/share/alsa/alsa.conf through
# ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$dir/asoundrc
pcm.!default { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
ctl.!default { type pulse server "unix:$dir/pulse.sock" }
pcm.!pulse { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
ctl.!pulse { type pulse server "unix:$dir/pulse.sock" }
pcm.$sink_name { type pulse server "unix:$dir/pulse.sock" device "$sink_name" }
EOF

  local sink_args="format=s16le rate=$rate channels=$channels use_system_clock_for_timing=yes"
  sink_args+=" sink_name=$sink_name"
  # A clean environment: no session bus (else it may autolaunch a dbus-daemon), no X, our dirs.
  env -i PATH="/usr/sbin:/usr/bin:/sbin:/bin" LANG=C \
    HOME="$dir" XDG_RUNTIME_DIR="$dir/runtime" XDG_CONFIG_HOME="$dir/config" \
    XDG_STATE_HOME="$dir/state" PULSE_RUNTIME_PATH="$dir/runtime" PULSE_STATE_PATH="$dir/state" \
    PULSE_CLIENTCONFIG="$dir/client.conf" DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/no-bus" \
    pulseaudio -n \
      -L "module-native-protocol-unix socket=$dir/pulse.sock auth-anonymous=1" \
      -L "module-pipe-sink file=$dir/sink.fifo $sink_args" \
      --daemonize=no --system=no --exit-idle-time=-1 \
      --disallow-exit --use-pid-file=no --no-cpu-limit --log-target=stderr --log-time \
      --log-level="$log_level" \
      </dev/null >"$dir/pulse.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/pid"

  local deadline=$(($(date +%s%N) + timeout_s * 1000000000)) ok=
  while (($(date +%s%N) < deadline)); do
    alive "$pid" || break
    # PulseAudio 16 runs on after a failed -L (--fail does not stop it): catch it in the log.
    grep -q 'Failed to load module' "$dir/pulse.log" && break
    # The one sink becomes the default by itself; set-default-sink only makes sure.
    if [ -p "$dir/sink.fifo" ] &&
       client_env "$dir" timeout 2 pactl set-default-sink "$sink_name" 2>/dev/null &&
       [ "$(client_env "$dir" timeout 2 pactl get-default-sink 2>/dev/null)" = "$sink_name" ]; then
      ok=1; break
    fi
    sleep 0.1
  done
  if [ -z "$ok" ]; then
    end_pid "$pid" 2
    rm -f "$dir/pid"
    echo "pulse-test-server: server did not come up (waited up to ${timeout_s} s); log tail:" >&2
    tail -n 30 "$dir/pulse.log" >&2 || true
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
export NARRATOR_PULSE_PID=$pid
EOF
  echo "$dir/env"
}

cmd_record() {
  [ $# -ge 2 ] || usage
  local dir out times
  dir=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  out=$2; shift 2
  times="${out%.raw}.times.tsv"
  if [ $# -ge 1 ] && [ "$1" != "--" ]; then times=$1; shift; fi
  [ "${1:-}" = "--" ] && shift
  [ -p "$dir/sink.fifo" ] && [ -f "$dir/env" ] || die "no server in $dir: run start first"
  local channels
  channels=$(sed -n 's/^export NARRATOR_PULSE_CHANNELS=//p' "$dir/env")
  rm -f "$dir/recorder.ready"
  echo $$ >"$dir/recorder.pid"
  local rt=()
  # Only where SCHED_FIFO is permitted (root alone is not enough: a container may drop
  # CAP_SYS_NICE or give real-time threads no time), else at normal priority.
  if command -v chrt >/dev/null && chrt -f 30 true 2>/dev/null; then rt=(chrt -f 30); fi
  exec "${rt[@]}" python3 "$here/fifo-recorder.py" --ready "$dir/recorder.ready" \
    --frame-bytes $((channels * 2)) "$@" \
    "$dir/sink.fifo" "$out" "$times"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  local dir pid
  [ -d "$1" ] || return 0
  dir=$(cd "$1" && pwd -P)
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    if is_our_daemon "$pid" "$dir"; then end_pid "$pid" 5; fi
  fi
  if [ -f "$dir/recorder.pid" ]; then
    pid=$(cat "$dir/recorder.pid")
    # The recorder exits on EOF once the daemon is gone; end it only if it is still ours.
    if alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/sink.fifo"; then
      end_pid "$pid" 2
    fi
  fi
  rm -f "$dir/pid" "$dir/recorder.pid" "$dir/recorder.ready" "$dir/pulse.sock" \
        "$dir/pulse.sock.lock" "$dir/sink.fifo" "$dir/env"
  rm -rf "$dir/runtime"
}

cmd_status() {
  [ $# -eq 1 ] || usage
  local dir
  dir=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  if [ -f "$dir/pid" ] && is_our_daemon "$(cat "$dir/pid")" "$dir"; then
    echo "running (pid $(cat "$dir/pid"))"
    client_env "$dir" timeout 2 pactl list short sinks || true
  else
    echo "not running"; return 1
  fi
}

[ $# -ge 1 ] || usage
sub=$1; shift
case $sub in
  start) cmd_start "$@" ;;
  record) cmd_record "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  *) usage ;;
esac
