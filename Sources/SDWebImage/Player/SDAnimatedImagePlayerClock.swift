import Dispatch
import Foundation
import SDSync

/// What drives an `SDAnimatedImagePlayer`: a monotonic time and ticks (the
/// display link's role on Apple platforms). Ticks run the player's frame
/// logic and handlers, so deliver them on the thread that draws.
public protocol SDAnimatedImagePlayerClock: AnyObject, Sendable {
    /// Seconds, monotonic.
    var now: TimeInterval { get }
    /// Start calling `tick` (replacing any earlier one).
    func start(_ tick: @escaping @Sendable () -> Void)
    /// Stop ticking; no tick starts after it returns.
    func stop()
}

/// Ticks at a fixed rate on a dispatch queue (default 60 per second on a
/// private serial queue; give your toolkit's main queue to draw from the handlers).
// @unchecked: `lock` guards `timer` (DispatchSourceTimer is not Sendable); the rest is immutable.
public final class SDAnimatedImageDisplayClock: SDAnimatedImagePlayerClock, @unchecked Sendable {
    private let queue: DispatchQueue
    private let interval: TimeInterval
    private let lock = NSLock()
    private var timer: DispatchSourceTimer?

    /// Tick `framesPerSecond` times a second (at least 1) on `queue`.
    public init(queue: DispatchQueue = DispatchQueue(label: "SDAnimatedImagePlayer.clock"), framesPerSecond: Double = 60) {
        self.queue = queue
        interval = 1 / max(1, framesPerSecond)
    }

    public var now: TimeInterval { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    public func start(_ tick: @escaping @Sendable () -> Void) {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(1))
        t.setEventHandler(handler: tick)
        lock.lock()
        timer?.cancel()
        timer = t
        lock.unlock()
        t.resume()
    }

    public func stop() {
        lock.lock()
        timer?.cancel()
        timer = nil
        lock.unlock()
    }

    deinit { timer?.cancel() }
}

/// A clock moved by hand, for tests and benchmarks: `advance(by:)` moves
/// time and ticks once, on the caller's thread.
public final class SDAnimatedImageManualClock: SDAnimatedImagePlayerClock, Sendable {
    private let state = Locked<(time: TimeInterval, tick: (@Sendable () -> Void)?)>((0, nil))

    /// A stopped clock at time 0.
    public init() {}

    public var now: TimeInterval { state.withLock { $0.time } }
    /// Started and not stopped.
    public var isRunning: Bool { state.withLock { $0.tick != nil } }

    public func start(_ tick: @escaping @Sendable () -> Void) { state.withLock { $0.tick = tick } }
    public func stop() { state.withLock { $0.tick = nil } }

    /// Move time on by `seconds` and tick (if started).
    public func advance(by seconds: TimeInterval) {
        let t = state.withLock { s in
            s.time += max(0, seconds)
            return s.tick
        }
        t?()
    }
}
