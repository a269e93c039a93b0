import Dispatch
import Foundation

/// Frame order (SDWebImage's `SDAnimatedImagePlaybackMode`). One loop of
/// `bounce` is 0, 1, …, n-1, n-2, …, 1 (then 0 starts the next);
/// `reversedBounce` is the same from the last frame.
public enum SDAnimatedImagePlaybackMode: Int, Sendable {
    /// First to last, then again.
    case normal
    /// Last to first, then again.
    case reverse
    /// Forward, then back (without repeating the ends).
    case bounce
    /// Back from the last frame, then forward.
    case reversedBounce
}

/// Plays an animation from its frame source (SDWebImage's
/// `SDAnimatedImagePlayer`): each clock tick adds the elapsed time times
/// `playbackRate`; when the current frame's (effective) duration is used up
/// the next frame is shown — if it is decoded. Frames are decoded ahead on a
/// background queue into a buffer of at most `maxBufferSize` bytes (one frame
/// when a frame is larger), never on the tick's thread: a frame that is not
/// ready yet keeps the current one on screen a little longer.
///
/// A progressive download's animation (an incremental `SDAnimatedImage`)
/// grows while it plays: the player holds the last frame that has arrived
/// instead of starting the next loop (`waitsForMoreFrames`), and goes on when
/// `totalFrameCount` grows — the frame on screen never goes back.
// @unchecked: playback state and the frame buffer are under `lock`; handlers run outside it.
public final class SDAnimatedImagePlayer: @unchecked Sendable {
    /// A frame as shown.
    public struct Frame: Sendable {
        /// The frame's index in the animation.
        public let index: UInt
        /// Loops finished before this frame was shown.
        public let loop: UInt
        /// The composited frame.
        public let image: SDImage
    }

    /// Where frames come from (an `SDAnimatedImage`, say).
    public let provider: any SDAnimatedImageProvider
    /// What ticks the playback (a timer, a display's frame clock, a test's hand).
    public let clock: any SDAnimatedImagePlayerClock
    private var durations: [TimeInterval]

    private let lock = NSLock()
    private let decodeQueue = DispatchQueue(label: "SDAnimatedImagePlayer.decode", qos: .userInitiated)
    private var playing = false
    private var position = 0      // within one loop of the play order
    private var loop: UInt = 0
    private var elapsed: TimeInterval = 0
    private var lastTick: TimeInterval?
    private var current: SDImage?
    private var currentIndex: UInt = 0
    private var buffer: [UInt: SDImage] = [:]
    private var bytes = 0
    private var peak = 0
    private var frameBytes = 0
    private var fetching = false
    private var unavailable: Set<UInt> = []
    private var streams: [UUID: AsyncStream<Frame>.Continuation] = [:]
    private var _rate = 1.0
    private var _mode = SDAnimatedImagePlaybackMode.normal
    private var _maxBuffer = 0
    private var _totalLoops: UInt
    private var _waits: Bool
    private var _onFrame: (@Sendable (UInt, SDImage) -> Void)?
    private var _onLoop: (@Sendable (UInt) -> Void)?

    /// nil when the source has no frames.
    public init?(provider: any SDAnimatedImageProvider,
                 clock: any SDAnimatedImagePlayerClock = SDAnimatedImageDisplayClock()) {
        let n = provider.animatedImageFrameCount
        guard n > 0 else { return nil }
        self.provider = provider
        self.clock = clock
        durations = (0..<n).map { provider.animatedImageDuration(at: $0) }
        _totalLoops = provider.animatedImageLoopCount
        _waits = (provider as? SDImage)?.isIncremental ?? false
    }

    /// The player of an animated image (nil for a still one).
    public convenience init?(image: SDImage, clock: any SDAnimatedImagePlayerClock = SDAnimatedImageDisplayClock()) {
        guard let p = image.animatedProvider else { return nil }
        self.init(provider: p, clock: clock)
    }

    deinit {
        clock.stop()
        for c in streams.values { c.finish() }
    }

    private func locked<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }

    // MARK: - State

    /// Frames in the animation: the source's when the player was made; set it
    /// when a progressive source has more (SDWebImage's view does, per partial
    /// image). Frames from the source's `animatedImageDuration` for the new ones.
    public var totalFrameCount: UInt {
        get { locked { UInt(durations.count) } }
        set {
            guard newValue > 0 else { return }
            locked {
                let n = Int(newValue)
                if n < durations.count {
                    durations.removeLast(durations.count - n)
                } else {
                    for i in durations.count..<n { durations.append(provider.animatedImageDuration(at: UInt(i))) }
                }
                unavailable = []  // frames a growing source did not have yet
                if currentIndex >= newValue {
                    position = 0
                    currentIndex = index(at: 0)
                    current = buffer[currentIndex]
                    elapsed = 0
                } else {
                    position = firstPosition(of: currentIndex)
                }
                trim()
            }
            prefetch()
        }
    }

    /// The source is still arriving (true for an incremental image): at the
    /// end of a loop the player holds the frame on screen rather than start
    /// the next loop, until `totalFrameCount` grows or this is cleared.
    public var waitsForMoreFrames: Bool {
        get { locked { _waits } }
        set { locked { _waits = newValue } }
    }

    /// Take a progressive download's newer image of the same animation: its
    /// frame count, and whether more are coming. False (nothing changed) when
    /// `image` is not an animation from the same frame source.
    @discardableResult
    public func update(with image: SDImage) -> Bool {
        guard let mine = (provider as? SDAnimatedImage)?.animatedCoder, let image = image as? SDAnimatedImage,
              mine === image.animatedCoder else { return false }
        let n = image.animatedImageFrameCount
        if n > totalFrameCount { totalFrameCount = n }
        waitsForMoreFrames = image.isIncremental
        return true
    }

    /// The frame on screen (nil before the first is decoded).
    public var currentFrame: SDImage? { locked { current } }
    /// The index of the frame on screen.
    public var currentFrameIndex: UInt { locked { currentIndex } }
    /// Loops finished so far.
    public var currentLoopCount: UInt { locked { loop } }
    /// Loops to play (0: forever); the source's unless set.
    public var totalLoopCount: UInt {
        get { locked { _totalLoops } }
        set { locked { _totalLoops = newValue } }
    }
    /// Speed (1: as the file says; 2: twice as fast). Clamped to 0.01...100.
    public var playbackRate: Double {
        get { locked { _rate } }
        set { locked { _rate = min(100, max(0.01, newValue)) } }
    }
    /// The frame order; changing it while playing goes on from the frame on screen.
    public var playbackMode: SDAnimatedImagePlaybackMode {
        get { locked { _mode } }
        set {
            locked {
                _mode = newValue
                if current == nil {  // nothing shown yet: start where the mode starts
                    position = 0
                    currentIndex = index(at: 0)
                } else {
                    position = firstPosition(of: currentIndex)
                }
                trim()
            }
        }
    }
    /// Bytes of decoded frames kept ahead. 0: automatic, an eighth of the
    /// available memory up to 128 MiB. It bounds only what is kept ahead: the
    /// next frame is always decoded (at a budget under one frame, when the one
    /// before it is shown), so playback goes on at any budget.
    public var maxBufferSize: Int {
        get { locked { _maxBuffer } }
        set { locked { _maxBuffer = max(0, newValue); trim() } }
    }
    /// Called on each new frame, on the clock's thread.
    public var animationFrameHandler: (@Sendable (_ index: UInt, _ frame: SDImage) -> Void)? {
        get { locked { _onFrame } }
        set { locked { _onFrame = newValue } }
    }
    /// Called when a loop finished (with the loops finished so far).
    public var animationLoopHandler: (@Sendable (_ loopCount: UInt) -> Void)? {
        get { locked { _onLoop } }
        set { locked { _onLoop = newValue } }
    }
    /// Started and not paused or stopped (or finished its loops).
    public var isPlaying: Bool { locked { playing } }
    /// Bytes of frames decoded ahead now.
    public var bufferedBytes: Int { locked { bytes } }
    /// The most `bufferedBytes` has ever been (the budget check).
    public var peakBufferedBytes: Int { locked { peak } }
    /// The budget in force: `maxBufferSize`, or the automatic one when it is 0.
    public var bufferBudget: Int { locked { _maxBuffer > 0 ? _maxBuffer : Self.automaticBudget } }

    /// The shown frames, for `for await frame in player.frames`; ends when the
    /// playback stops (its loops done, `stopPlaying`, the player gone).
    public var frames: AsyncStream<Frame> {
        AsyncStream { c in
            let id = UUID()
            lock.lock()
            streams[id] = c
            lock.unlock()
            c.onTermination = { [weak self] _ in self?.locked { _ = self?.streams.removeValue(forKey: id) } }
        }
    }

    // MARK: - Control

    /// Start (or resume) on the clock; decoding ahead begins at once.
    public func startPlaying() {
        lock.lock()
        guard !playing else { lock.unlock(); return }
        playing = true
        lastTick = clock.now
        lock.unlock()
        clock.start { [weak self] in self?.tick() }
        prefetch()
    }

    /// Stop where it is; `startPlaying` goes on from there.
    public func pausePlaying() {
        locked { playing = false }
        clock.stop()
    }

    /// Stop and go back to the first frame of the first loop (the buffer is
    /// kept); nothing is on screen until `startPlaying` shows the first frame
    /// again at its first tick (SDWebImage's `stopPlaying` resets the status).
    public func stopPlaying() {
        clock.stop()
        let ended: [AsyncStream<Frame>.Continuation] = locked {
            playing = false
            loop = 0
            elapsed = 0
            position = 0
            currentIndex = index(at: 0)
            current = nil
            defer { streams = [:] }
            return Array(streams.values)
        }
        for c in ended { c.finish() }
    }

    /// Show frame `index` of loop `loopCount`: at once when it is decoded
    /// (`animationFrameHandler` and `frames` get it now, as SDWebImage shows a
    /// frame it has), else at the tick after it is.
    public func seekToFrame(at index: UInt, loopCount: UInt) {
        let shown: (Frame, (@Sendable (UInt, SDImage) -> Void)?, [AsyncStream<Frame>.Continuation])? = locked {
            guard index < durations.count else { return nil }
            position = firstPosition(of: index)
            currentIndex = index
            loop = loopCount
            elapsed = 0
            current = buffer[index]
            trim()
            return current.map { (Frame(index: index, loop: loopCount, image: $0), _onFrame, Array(streams.values)) }
        }
        if let (frame, onFrame, conts) = shown {
            onFrame?(frame.index, frame.image)
            for c in conts { c.yield(frame) }
        }
        prefetch()
    }

    /// Drop the decoded frames kept ahead.
    public func clearFrameBuffer() {
        locked {
            buffer = [:]
            bytes = 0
        }
    }

    /// Block until the frames wanted now are decoded (tests, benchmarks).
    public func waitForBufferedFrames() {
        decodeQueue.sync {}
    }

    // MARK: - Play order

    private var loopLength: Int {
        let n = durations.count
        switch _mode {
        case .normal, .reverse: return n
        case .bounce, .reversedBounce: return max(1, 2 * n - 2)
        }
    }

    private func index(at p: Int) -> UInt {
        let n = durations.count
        let bounce = p < n ? p : 2 * n - 2 - p
        switch _mode {
        case .normal: return UInt(p)
        case .reverse: return UInt(n - 1 - p)
        case .bounce: return UInt(bounce)
        case .reversedBounce: return UInt(n - 1 - bounce)
        }
    }

    private func firstPosition(of i: UInt) -> Int {
        (0..<loopLength).first { index(at: $0) == i } ?? 0
    }

    /// Frame indices of the positions after the current one that fit in the buffer.
    private func window() -> [UInt] {
        let budget = _maxBuffer > 0 ? _maxBuffer : Self.automaticBudget
        let count = frameBytes > 0 ? max(1, budget / frameBytes) : 1
        var out: [UInt] = []
        var seen = Set<UInt>()  // bounce modes visit a frame twice a loop
        var p = position
        var l = loop
        if current == nil { out.append(currentIndex); seen.insert(currentIndex) }
        while out.count < min(count, durations.count) {
            p += 1
            if p >= loopLength {
                if _waits { break }  // what comes after the end has not arrived
                p = 0
                l += 1
                if _totalLoops > 0 && l >= _totalLoops { break }
            }
            let i = index(at: p)
            if seen.insert(i).inserted { out.append(i) }
            if p == position && l > loop { break }
        }
        return out
    }

    /// Drop what the window no longer holds (caller holds `lock`).
    private func trim() {
        let keep = Set(window())
        for (i, f) in buffer where !keep.contains(i) {
            buffer[i] = nil
            bytes -= f.bitmap.cost
        }
    }

    static let automaticBudget: Int = {
        var available = 1 << 30
        if let info = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
           let line = info.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }),
           let kb = Int(line.split(separator: " ")[1]) {
            available = kb * 1024
        }
        return min(available / 8, 128 << 20)
    }()

    // MARK: - Decoding ahead

    private func prefetch() {
        lock.lock()
        guard !fetching else { lock.unlock(); return }
        fetching = true
        lock.unlock()
        decodeQueue.async { [weak self] in self?.fill() }
    }

    private func fill() {
        while true {
            lock.lock()
            let budget = _maxBuffer > 0 ? _maxBuffer : Self.automaticBudget
            let wanted = window()
            let next = wanted.first { buffer[$0] == nil && !unavailable.contains($0) }
            // the first frame wanted is always decoded; the budget bounds the rest
            let room = !wanted.contains { buffer[$0] != nil } || bytes + max(frameBytes, 1) <= budget
            guard let next, room else {
                fetching = false
                lock.unlock()
                return
            }
            lock.unlock()
            let frame = provider.animatedImageFrame(at: next)
            lock.lock()
            if let frame {
                frameBytes = max(frameBytes, frame.bitmap.cost)
                let now = window()
                if now.contains(next), !now.contains(where: { buffer[$0] != nil }) || bytes + frame.bitmap.cost <= budget {
                    buffer[next] = frame
                    bytes += frame.bitmap.cost
                    peak = max(peak, bytes)
                }
            } else {
                unavailable.insert(next)
            }
            lock.unlock()
        }
    }

    // MARK: - The tick

    private func tick() {
        lock.lock()
        guard playing else { lock.unlock(); return }
        let now = clock.now
        let dt = lastTick.map { (now - $0) * _rate } ?? 0
        lastTick = now
        var shown: Frame?
        var finishedLoop: UInt?
        var ended = false
        if current == nil {
            if let f = buffer[currentIndex] {
                current = f
                elapsed = 0
                shown = Frame(index: currentIndex, loop: loop, image: f)
                trim()  // the frame on screen is no longer ahead: room for the next
            }
        } else {
            elapsed += dt
            let duration = durations[Int(currentIndex)]
            if elapsed >= duration {
                var p = position + 1
                var l = loop
                if p >= loopLength { p = 0; l += 1 }
                if l > loop && _waits {
                    elapsed = duration  // hold the last frame that arrived
                } else if l > loop && _totalLoops > 0 && l >= _totalLoops {
                    // the last loop is done: stay on its last frame
                    playing = false
                    loop = l
                    finishedLoop = l
                    ended = true
                } else if let f = buffer[index(at: p)] {
                    elapsed = min(elapsed - duration, durations[Int(index(at: p))])
                    if l > loop { finishedLoop = l }
                    position = p
                    loop = l
                    currentIndex = index(at: p)
                    current = f
                    shown = Frame(index: currentIndex, loop: l, image: f)
                    trim()
                }
            }
        }
        let onFrame = _onFrame, onLoop = _onLoop
        let conts = Array(streams.values)
        if ended { streams = [:] }
        lock.unlock()
        if let l = finishedLoop { onLoop?(l) }
        if let s = shown {
            onFrame?(s.index, s.image)
            for c in conts { c.yield(s) }
        }
        if ended {
            clock.stop()
            for c in conts { c.finish() }
        } else {
            prefetch()
        }
    }
}
