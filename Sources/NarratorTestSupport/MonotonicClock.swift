#if canImport(Glibc)
    import Glibc
#endif

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of `play`'s `heard` stamps and of the
/// recorder's reads.
public func monotonicNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}
