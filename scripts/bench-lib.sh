# Sourced by the bench scripts: `bench_narrator NAME` sets `narrator` to $NARRATOR when it is
# given (an executable), else builds narrator for release as it ships (scripts/build-release.sh,
# scratch path .build-bench) and uses that. Needs `repo`; messages go to stderr prefixed with NAME.
bench_narrator() {
    local name=$1 bin
    if [[ -n ${NARRATOR:-} ]]; then
        narrator=$NARRATOR
        [[ -x $narrator ]] || { printf '%s: NARRATOR=%s is not an executable\n' "$name" "$narrator" >&2; exit 1; }
        return
    fi
    printf 'building narrator (release as shipped, scripts/build-release.sh, scratch path .build-bench)...\n' >&2
    bin=$(bash "$repo/scripts/build-release.sh" narrator) || { printf '%s: release build failed\n' "$name" >&2; exit 1; }
    narrator=$bin/narrator
}
