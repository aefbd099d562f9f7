# Sourced by the bench scripts: `bench_narrator NAME` sets `narrator` to $NARRATOR when it is
# given (an executable), else builds narrator for release and uses that: as it ships
# (scripts/build-release.sh, scratch path .build-bench), or with BENCH_BUILD=plain as a SwiftPM
# user builds it, plain `swift build -c release` (scratch path .build-bench-plain; Package.swift
# links the Swift runtime in there too). Needs `repo`; messages go to stderr prefixed with NAME.
bench_narrator() {
    local name=$1 bin
    if [[ -n ${NARRATOR:-} ]]; then
        narrator=$NARRATOR
        [[ -x $narrator ]] || { printf '%s: NARRATOR=%s is not an executable\n' "$name" "$narrator" >&2; exit 1; }
        printf 'using NARRATOR=%s\n' "$narrator" >&2
        return
    fi
    case ${BENCH_BUILD:-shipped} in
    plain)
        printf 'building narrator (plain swift build -c release, scratch path .build-bench-plain)...\n' >&2
        (cd "$repo" && swift build -c release --scratch-path .build-bench-plain --product narrator >&2) ||
            { printf '%s: release build failed\n' "$name" >&2; exit 1; }
        narrator=$repo/.build-bench-plain/release/narrator
        ;;
    shipped)
        printf 'building narrator (release as shipped, scripts/build-release.sh, scratch path .build-bench)...\n' >&2
        bin=$(bash "$repo/scripts/build-release.sh" narrator) || { printf '%s: release build failed\n' "$name" >&2; exit 1; }
        narrator=$bin/narrator
        ;;
    *) printf '%s: BENCH_BUILD=%s: say plain or shipped\n' "$name" "$BENCH_BUILD" >&2; exit 1 ;;
    esac
    [[ -x $narrator ]] || { printf '%s: no binary at %s after the build\n' "$name" "$narrator" >&2; exit 1; }
}
