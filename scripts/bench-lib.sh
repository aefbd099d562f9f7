# Sourced by the bench scripts: `bench_narrator NAME` sets `narrator` to $NARRATOR when it is
# given (an executable), else builds narrator in release (scratch path .build-bench) and uses
# that. Needs `repo`; messages go to stderr prefixed with NAME.
bench_narrator() {
    local name=$1 log
    if [[ -n ${NARRATOR:-} ]]; then
        narrator=$NARRATOR
        [[ -x $narrator ]] || { printf '%s: NARRATOR=%s is not an executable\n' "$name" "$narrator" >&2; exit 1; }
        return
    fi
    printf 'building narrator (release, scratch path .build-bench)...\n' >&2
    log=$(mktemp)
    if ! (cd "$repo" && swift build -c release --product narrator --scratch-path .build-bench) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        printf '%s: release build failed\n' "$name" >&2
        exit 1
    fi
    rm -f "$log"
    narrator=$repo/.build-bench/release/narrator
}
