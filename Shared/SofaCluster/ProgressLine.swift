internal import Foundation
internal import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

/// Progress of long work, for people watching a terminal: one line on stderr rewritten in place
/// (`\r`), with what is done of the total, the rate and the time left, or a spinner and the time
/// spent when the total is unknown. When stderr is not a terminal (a pipe, a file, a test) it
/// prints nothing at all, so scripts read the same output as before.
///
/// ```
/// import  42,000/100,000 docs  42%  8,400 docs/s  ETA 0:07
/// blob put  12.0/100.0 MiB  12%  48.0 MiB/s  ETA 0:02
/// compact  / 3.2 s
/// ```
public final class ProgressLine: Sendable {
    private struct State {
        var done: UInt64 = 0
        var total: UInt64?
        var frame = 0
        var lastDrawn: ContinuousClock.Instant?
        var finished = false
    }

    private let label: String
    private let unit: ProgressText.Unit
    private let started = ContinuousClock.now
    private let enabled: Bool
    private let state: Mutex<State>
    /// The line is redrawn at most this often (the last update is always drawn by `finish`).
    static let interval: Duration = .milliseconds(100)

    /// Whether stderr is a terminal.
    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    public init(_ label: String, total: UInt64? = nil, unit: ProgressText.Unit = .items("docs"),
                enabled: Bool = ProgressLine.stderrIsTerminal) {
        self.label = label
        self.unit = unit
        self.enabled = enabled
        state = Mutex(State(total: total))
    }

    /// Sets what is done (a count of the unit).
    public func update(done: UInt64) {
        guard enabled else { return }
        draw { $0.done = done }
    }

    /// Sets the total, once it is known.
    public func update(total: UInt64?) {
        guard enabled else { return }
        draw { $0.total = total }
    }

    /// Adds to what is done.
    public func advance(by count: UInt64) {
        guard enabled else { return }
        draw { $0.done += count }
    }

    /// Erases the line (the command's result follows on stdout).
    public func finish() {
        guard enabled else { return }
        let wasDrawn = state.withLock { state in
            defer { state.finished = true }
            return !state.finished && state.lastDrawn != nil
        }
        if wasDrawn { write("\r\u{1B}[K") }
    }

    /// Runs `body`, then erases the line, however `body` ends.
    public func around<T>(_ body: () async throws -> T) async rethrows -> T {
        defer { finish() }
        return try await body()
    }

    /// Runs `body`, redrawing the line (a spinner and the time spent) while it runs, then erases it.
    public func spinning<T>(_ body: () async throws -> T) async rethrows -> T {
        guard enabled else { return try await body() }
        let ticker = Task { [self] in
            while !Task.isCancelled {
                draw(force: true) { $0.frame += 1 }
                try? await Task.sleep(for: Self.interval)
            }
        }
        defer {
            ticker.cancel()
            finish()
        }
        return try await body()
    }

    private func draw(force: Bool = false, _ change: (inout State) -> Void) {
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            change(&state)
            guard !state.finished else { return nil }
            if !force, let last = state.lastDrawn, now - last < Self.interval { return nil }
            state.lastDrawn = now
            return ProgressText.line(label: label, done: state.done, total: state.total, unit: unit,
                                     elapsed: now - started, frame: state.frame)
        }
        if let line { write("\r" + line + "\u{1B}[K") }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// The text of a progress line (see `ProgressLine`): pure functions of the figures.
public enum ProgressText {
    public enum Unit: Sendable, Equatable {
        /// Things counted, named in the plural ("docs").
        case items(String)
        case bytes
    }

    /// `label  done/total unit  percent  rate  ETA m:ss`; without a total,
    /// `label  spinner done unit  rate  elapsed` (the count and rate left out while nothing is done).
    public static func line(label: String, done: UInt64, total: UInt64?, unit: Unit, elapsed: Duration, frame: Int) -> String {
        let seconds = Self.seconds(elapsed)
        guard let total else {
            let spinner = ["|", "/", "-", "\\"][frame % 4]
            guard done > 0 else { return "\(label)  \(spinner) \(time(seconds))" }
            return "\(label)  \(spinner) \(amount(done, of: done, unit))  \(rate(done, seconds, unit))  \(time(seconds))"
        }
        let shown = min(done, total)
        let percent = total == 0 ? 100 : Int(shown * 100 / total)
        return "\(label)  \(amount(shown, of: total, unit, withTotal: true))  \(percent)%  \(rate(shown, seconds, unit))  "
            + "ETA \(eta(done: shown, total: total, seconds: seconds))"
    }

    /// `1,234 docs/s` or `45.2 MiB/s`; `-` before a measurable time has passed.
    public static func rate(_ done: UInt64, _ seconds: Double, _ unit: Unit) -> String {
        guard seconds > 0.001 else { return "- \(unitName(unit))/s" }
        let perSecond = Double(done) / seconds
        switch unit {
        case .items(let name): return "\(grouped(UInt64(perSecond.rounded()))) \(name)/s"
        case .bytes:
            let (scale, name) = byteScale(UInt64(perSecond))
            return "\(oneDecimal(perSecond / scale)) \(name)/s"
        }
    }

    /// The time left at the rate so far: `m:ss` or `h:mm:ss`; `--:--` while nothing is done.
    public static func eta(done: UInt64, total: UInt64, seconds: Double) -> String {
        guard done < total else { return "0:00" }
        guard done > 0, seconds > 0 else { return "--:--" }
        return clock((Double(total - done) * seconds / Double(done)).rounded(.up))
    }

    /// `m:ss`, or `h:mm:ss` from an hour on.
    public static func clock(_ seconds: Double) -> String {
        let whole = Int(min(seconds, 359_999))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }

    /// `1,234,567`.
    public static func grouped(_ value: UInt64) -> String {
        var digits = Array(String(value))
        var index = digits.count - 3
        while index > 0 {
            digits.insert(",", at: index)
            index -= 3
        }
        return String(digits)
    }

    /// `done/total docs` or `12.0/100.0 MiB` (both in the total's scale); alone, `done docs`.
    static func amount(_ done: UInt64, of total: UInt64, _ unit: Unit, withTotal: Bool = false) -> String {
        switch unit {
        case .items(let name):
            return withTotal ? "\(grouped(done))/\(grouped(total)) \(name)" : "\(grouped(done)) \(name)"
        case .bytes:
            let (scale, name) = byteScale(total)
            let value = oneDecimal(Double(done) / scale)
            return withTotal ? "\(value)/\(oneDecimal(Double(total) / scale)) \(name)" : "\(value) \(name)"
        }
    }

    private static func time(_ seconds: Double) -> String {
        seconds < 60 ? "\(oneDecimal(seconds)) s" : clock(seconds)
    }

    private static func unitName(_ unit: Unit) -> String {
        switch unit {
        case .items(let name): name
        case .bytes: "B"
        }
    }

    private static func byteScale(_ bytes: UInt64) -> (Double, String) {
        switch bytes {
        case ..<(1 << 10): (1, "B")
        case ..<(1 << 20): (1024, "KiB")
        case ..<(1 << 30): (Double(1 << 20), "MiB")
        default: (Double(1 << 30), "GiB")
        }
    }

    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
