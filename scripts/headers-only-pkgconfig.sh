#!/usr/bin/env bash
# Writes pkg-config files that give the headers, and no library to link, of the C libraries
# narrator opens with dlopen only when a command needs them (librsvg for PNG plots, eSpeak NG
# for synth and align, libpulse for --output pulse; Sources/CLazyLibrary and the C*Loader
# targets, whose stubs define every function the Swift code calls).
#
# SwiftPM passes a system library target's `pkg-config --libs` to every link, whatever its module
# map says, so a plain `swift build` records librsvg, cairo, GLib, eSpeak NG, PulseAudio... as
# NEEDED and the loader maps some 50 libraries at each start that no command calls into until
# it dlopens them. With PKG_CONFIG_PATH pointing at this folder first, pkg-config finds these
# files before the system's: the same -I flags (read from the system's own .pc files, so they
# follow the installed versions), no -l flags. A function called without a stub then fails the
# link instead of binding at start (scripts/make-lazy-stubs.py adds it).
#
# Usage: scripts/headers-only-pkgconfig.sh DIR     (prints DIR; the Makefile and
#        scripts/build-release.sh export PKG_CONFIG_PATH=DIR)
set -euo pipefail

dir=${1:?usage: headers-only-pkgconfig.sh DIR}
mkdir -p "$dir"
# The search path without DIR: the system's own files (and any the caller added), not the ones
# written here before.
system_path=$(printf '%s' "${PKG_CONFIG_PATH:-}" | tr ':' '\n' | grep -vxF -- "$dir" | paste -sd: -) || true
for package in librsvg-2.0 espeak-ng libpulse; do
    cflags=$(PKG_CONFIG_PATH=$system_path pkg-config --cflags "$package") || {
        printf 'headers-only-pkgconfig: pkg-config knows no %s (make deps installs it)\n' "$package" >&2
        exit 1
    }
    version=$(PKG_CONFIG_PATH=$system_path pkg-config --modversion "$package")
    tmp=$(mktemp "$dir/.$package.XXXXXX")
    printf 'Name: %s\nDescription: %s headers only: narrator loads the library with dlopen\nVersion: %s\nCflags: %s\nLibs:\n' \
        "$package" "$package" "$version" "$cflags" >"$tmp"
    # Rewritten only when it changes, so that SwiftPM does not rebuild for nothing.
    if cmp -s "$tmp" "$dir/$package.pc"; then rm -f "$tmp"; else mv -f "$tmp" "$dir/$package.pc"; fi
done
printf '%s\n' "$dir"
