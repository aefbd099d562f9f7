import NarratorOutputs
import Testing

/// `SteppedTimingReports` against a simulated server whose true audible clock is known: reports
/// every millisecond (with jitter), a heard frame that moves once per quantum, the server's
/// thread updating it late by up to 0.3 ms, and what the step names heard a quantum later
/// (what PipeWire 0.3.65's pulse server does, measured through scripts/pipewire-test-server.sh).
@Suite struct SteppedTimingReportsTests {
    static let rate = 48000
    static let quantum = 512
    static let t0: Int64 = 5_000_000_000

    /// A deterministic generator of numbers in 0..<1.
    struct Noise {
        var state: UInt64
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    static func ns(_ frames: Int) -> Int64 { Int64((Double(frames) * 1e9 / Double(rate)).rounded()) }
    static func frames(_ nanoseconds: Int64) -> Double { Double(nanoseconds) * Double(rate) / 1e9 }

    /// The server's report at `time`: the frame its latest step named (steps at t0 + k·quantum,
    /// each seen `lateness(k)` late), or nil before the first.
    static func report(at time: Int64, stepShift: (Int) -> Int64 = { _ in 0 }, lateness: (Int) -> Int64) -> Int? {
        var k = Int((time - t0) / ns(quantum))
        while k >= 0 && t0 + ns(k * quantum) + stepShift(k) + lateness(k) > time { k -= 1 }
        guard k >= 0 else { return nil }
        // Frame k·quantum is heard at the step; the step names one quantum more.
        return k * quantum + quantum
    }

    @Test func smoothReportsPassThroughUnchanged() {
        var steps = SteppedTimingReports(rate: Self.rate)
        for i in 0..<2000 {
            let time = Self.t0 + Int64(i) * 1_000_000 + Int64(i % 7) * 13_000
            let heard = 1000 + Int(Self.frames(time - Self.t0))
            let reading = steps.reading(heard: heard, at: time)
            if i == 0 {
                #expect(reading == nil, "the first report cannot tell")
            } else {
                #expect(reading?.heard == heard && reading?.time == time)
            }
        }
        let stepping = steps.stepping
        #expect(!stepping)
    }

    @Test func steppedReportsBecomeTheTrueClock() throws {
        var steps = SteppedTimingReports(rate: Self.rate)
        var noise = Noise(state: 42)
        var lateness: [Int: Int64] = [:]
        var errors: [Double] = []
        var time = Self.t0 + 300_000
        for i in 0..<3000 {
            // The output's periods, and scheduling jitter.
            time += Int64(SteppedTimingReports.ditheredTick(i, tick: 1_000_000, spread: 500_000)) + Int64(noise.next() * 50_000)
            guard let heard = Self.report(at: time, lateness: { k in
                if let late = lateness[k] { return late }
                let late = Int64(noise.next() * 300_000)
                lateness[k] = late
                return late
            }) else { continue }
            guard let reading = steps.reading(heard: heard, at: time) else { continue }
            #expect(reading.time == time)
            // Reading minus truth, in milliseconds (negative: the reading is behind, safe).
            let error = (Double(reading.heard) - Self.frames(time - Self.t0)) / 48
            if i >= 400 { errors.append(error) }
        }
        let stepping = steps.stepping
        #expect(stepping)
        #expect(errors.count > 2000, "readings were made: \(errors.count)")
        let worstAhead = try #require(errors.max())
        let worstBehind = try #require(errors.min())
        let median = errors.sorted()[errors.count / 2]
        #expect(worstAhead <= 0.03, "never ahead of what is heard: \(worstAhead) ms")
        // Behind by the smallest delay (lateness and the wait for the next report) of the
        // steps in the window: at worst the largest lateness, typically a small part of it.
        #expect(worstBehind >= -0.3, "behind by at most the largest lateness: \(worstBehind) ms")
        // The smallest of 32 such delays: about 0.1 ms here (the window is kept short so that a
        // sound card's drift cannot make the bound stale).
        #expect(median >= -0.15, "median \(median) ms")
    }

    /// The graph loses a cycle: every step from then on comes a quantum later. The estimate
    /// starts afresh at the first late step, is never more than the overdue margin ahead, and
    /// is back within 0.2 ms once the window has refilled.
    @Test func aLostCycleMovesTheClock() throws {
        var steps = SteppedTimingReports(rate: Self.rate)
        var noise = Noise(state: 7)
        let lostAt = 150
        let shift = { (k: Int) -> Int64 in k >= lostAt ? Self.ns(Self.quantum) : 0 }
        var after: [Double] = []
        var time = Self.t0 + 300_000
        for _ in 0..<4000 {
            time += 1_000_000 + Int64(noise.next() * 100_000)
            guard let heard = Self.report(at: time, stepShift: shift, lateness: { _ in 50_000 }),
                let reading = steps.reading(heard: heard, at: time)
            else { continue }
            // The true clock: a quantum later from the lost cycle on.
            let lostTime = Self.t0 + Self.ns(lostAt * Self.quantum)
            let truth = Self.frames(time - Self.t0) - (time >= lostTime + Self.ns(Self.quantum) ? Double(Self.quantum) : 0)
            let error = (Double(reading.heard) - truth) / 48
            #expect(error <= 2.1, "at most the overdue margin ahead: \(error) ms at \(Double(time - lostTime) / 1e6) ms from the lost cycle, heard \(heard) reading \(reading.heard)")
            if time > lostTime + 30 * Self.ns(Self.quantum) { after.append(error) }
        }
        let worst = try #require(after.map(abs).max())
        #expect(worst <= 0.2, "back on the true clock (late by the 0.05 ms lateness and a little): \(worst) ms")
    }

    /// A server that stops stepping (it stalled): readings stop a step and the margin after the
    /// last step, rather than run on.
    @Test func aStalledServerGivesNoReadings() {
        var steps = SteppedTimingReports(rate: Self.rate)
        var time = Self.t0 + 300_000
        var last: Int64 = 0
        let stopAt: Int64 = Self.t0 + 1_000_000_000
        for _ in 0..<2000 {
            time += 1_000_000
            let frozen = min(time, stopAt)
            guard let heard = Self.report(at: frozen, lateness: { _ in 0 }),
                steps.reading(heard: heard, at: time) != nil
            else { continue }
            last = time
        }
        let lastStep = Self.t0 + Self.ns(Int((stopAt - Self.t0) / Self.ns(Self.quantum)) * Self.quantum)
        #expect(last > stopAt - 2_000_000)
        let margin = steps.overdueMargin
        #expect(last <= lastStep + Self.ns(Self.quantum) + margin)
    }

    /// A report that goes backwards (a flush) forgets the steps: no reading until new ones.
    @Test func backwardsForgetsTheSteps() {
        var steps = SteppedTimingReports(rate: Self.rate)
        var time = Self.t0
        for k in 0..<20 {
            for _ in 0..<10 {
                time += 1_000_000
                _ = steps.reading(heard: 10_000 + k * 512, at: time)
            }
        }
        let stepping = steps.stepping
        #expect(stepping)
        time += 1_000_000
        let back = steps.reading(heard: 4_000, at: time)
        time += 1_000_000
        let same = steps.reading(heard: 4_000, at: time)
        time += 1_000_000
        let stepped = steps.reading(heard: 4_512, at: time)
        #expect(back == nil && same == nil)
        #expect(stepped != nil)
    }
}
