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
    private let mainLoop: SDMainLoopQueue?
    private let pending = Locked(false)  // a main-loop tick queued and not yet run
    private let generation = Locked(0)   // bumped by start and stop: a queued tick of an older one is dropped
    private let interval: TimeInterval
    private let lock = NSLock()
    private var timer: DispatchSourceTimer?

    /// Tick `framesPerSecond` times a second (at least 1) on `queue`.
    public init(queue: DispatchQueue = DispatchQueue(label: "SDAnimatedImagePlayer.clock"), framesPerSecond: Double = 60) {
        self.queue = queue
        mainLoop = nil
        interval = 1 / max(1, framesPerSecond)
    }

    /// Tick `framesPerSecond` times a second inside your main loop (its
    /// ``SDMainLoopQueue/drain()``): a timer queues each tick unless the last
    /// one has not run yet, so a busy loop is never flooded; while no player
    /// plays, the clock is stopped and wakes nothing.
    public init(mainLoop: SDMainLoopQueue, framesPerSecond: Double = 60) {
        queue = DispatchQueue(label: "SDAnimatedImagePlayer.clock")
        self.mainLoop = mainLoop
        interval = 1 / max(1, framesPerSecond)
    }

    public var now: TimeInterval { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    public func start(_ tick: @escaping @Sendable () -> Void) {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(1))
        if let mainLoop {
            let (pending, generation) = (self.pending, self.generation)
            let mine = generation.withLock { g in g += 1; return g }
            pending.set(false)
            t.setEventHandler {
                guard pending.withLock({ p in defer { p = true }; return !p }) else { return }
                mainLoop.enqueue {
                    pending.set(false)
                    if generation.current == mine { tick() }  // not after stop, nor a replaced start
                }
            }
        } else {
            t.setEventHandler(handler: tick)
        }
        lock.lock()
        timer?.cancel()
        timer = t
        lock.unlock()
        t.resume()
    }

    public func stop() {
        generation.withLock { $0 += 1 }
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
