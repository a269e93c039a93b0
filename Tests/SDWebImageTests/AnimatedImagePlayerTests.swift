import Foundation
import SDTestSupport
import SDWebImage
import Testing

/// Records what a player showed.
final class PlayLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _frames: [UInt] = []
    private var _loops: [UInt] = []
    var frames: [UInt] { lock.lock(); defer { lock.unlock() }; return _frames }
    var loops: [UInt] { lock.lock(); defer { lock.unlock() }; return _loops }
    func attach(_ i: UInt) { lock.lock(); _frames.append(i); lock.unlock() }
    func attach(_ p: SDAnimatedImagePlayer) {
        p.animationFrameHandler = { i, _ in self.lock.lock(); self._frames.append(i); self.lock.unlock() }
        p.animationLoopHandler = { l in self.lock.lock(); self._loops.append(l); self.lock.unlock() }
    }
}

/// n frames of w x h, frame i's pixels all (i + 1), durations as given.
func memoryAnimation(_ n: Int, size: Int = 8, durations: [Double]? = nil, loops: UInt = 0) throws -> SDImage {
    let frames = try (0..<n).map { i in
        SDImageFrame(image: SDImage(bitmap: try Bitmap(width: size, height: size) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for j in 0..<(size * size) { p[j] = 0xFF00_0000 | UInt32(i + 1) }
        }), duration: durations?[i] ?? 0.1)
    }
    return try #require(SDImage.animatedImage(with: frames, loopCount: loops))
}

@Suite("SDAnimatedImagePlayer with a manual clock (ports of SDAnimatedImageTest's player tests)")
struct AnimatedImagePlayerTests {
    /// Let the decoder catch up, then move time.
    func step(_ p: SDAnimatedImagePlayer, _ c: SDAnimatedImageManualClock, _ d: Double) {
        p.waitForBufferedFrames()
        c.advance(by: d)
    }

    func play(_ mode: SDAnimatedImagePlaybackMode, frames n: Int = 4, loops: UInt = 2) throws -> PlayLog {
        let clock = SDAnimatedImageManualClock()
        let player = try #require(SDAnimatedImagePlayer(image: try memoryAnimation(n, loops: loops), clock: clock))
        player.playbackMode = mode
        let log = PlayLog()
        log.attach(player)
        player.startPlaying()
        for _ in 0..<40 where player.isPlaying { step(player, clock, 0.1) }
        #expect(!player.isPlaying && !clock.isRunning && player.currentLoopCount == loops)
        return log
    }

    @Test("Frame order in each playback mode; the loop count is honoured and the last frame stays")
    func modes() throws {
        let normal = try play(.normal)
        #expect(normal.frames == [0, 1, 2, 3, 0, 1, 2, 3] && normal.loops == [1, 2])
        #expect(try play(.reverse).frames == [3, 2, 1, 0, 3, 2, 1, 0])
        #expect(try play(.bounce).frames == [0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1])
        #expect(try play(.reversedBounce).frames == [3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2])
        #expect(try play(.normal, frames: 3, loops: 1).frames == [0, 1, 2])
    }

    @Test("Durations and playback rate decide when a frame changes")
    func timing() throws {
        let clock = SDAnimatedImageManualClock()
        let image = try memoryAnimation(3, durations: [0.1, 0.3, 0.2])
        let player = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
        player.startPlaying()
        step(player, clock, 0)
        #expect(player.currentFrameIndex == 0 && player.currentFrame != nil)
        step(player, clock, 0.05); #expect(player.currentFrameIndex == 0)
        step(player, clock, 0.05); #expect(player.currentFrameIndex == 1)
        step(player, clock, 0.2); #expect(player.currentFrameIndex == 1)
        step(player, clock, 0.1); #expect(player.currentFrameIndex == 2)
        player.playbackRate = 2
        step(player, clock, 0.1); #expect(player.currentFrameIndex == 0 && player.currentLoopCount == 1)
        player.pausePlaying()
        step(player, clock, 10); #expect(player.currentFrameIndex == 0 && !player.isPlaying)
        #expect(player.totalLoopCount == 0)  // the source's: forever
    }

    @Test("The buffer never holds more than maxBufferSize bytes ahead, and frames are the source's")
    func bufferBudget() throws {
        let clock = SDAnimatedImageManualClock()
        let image = try memoryAnimation(30, size: 32, loops: 2)
        let frameBytes = 32 * 32 * 4
        let player = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
        player.maxBufferSize = 3 * frameBytes
        let seen = PlayLog()
        let wrong = PlayLog()
        player.animationFrameHandler = { i, f in
            seen.attachFrame(i)
            if f.withUnsafeBytes({ $0.load(as: UInt32.self) }) != 0xFF00_0000 | UInt32(i + 1) { wrong.attachFrame(i) }
        }
        player.startPlaying()
        for _ in 0..<100 where player.isPlaying { step(player, clock, 0.1) }
        #expect(seen.frames == Array(0..<30) + Array(0..<30) && wrong.frames.isEmpty)
        #expect(player.peakBufferedBytes > 0 && player.peakBufferedBytes <= 3 * frameBytes)
    }

    @Test("Seeking shows that frame at the next tick; stop goes back to the start")
    func seek() throws {
        let clock = SDAnimatedImageManualClock()
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 4 && $0.expected.count == $0.frames })
        let image = try #require(SDAnimatedImage(data: try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))))
        let player = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
        player.startPlaying()
        for i in (0..<UInt(row.frames)).reversed() {
            player.seekToFrame(at: i, loopCount: 0)
            step(player, clock, 0)
            #expect(player.currentFrameIndex == i && player.currentFrame.map(sha) == row.expected[Int(i)].sha)
        }
        player.stopPlaying()
        #expect(player.currentFrameIndex == 0 && player.currentLoopCount == 0 && !player.isPlaying)
    }

    @Test("frames as an AsyncSequence ends with the playback")
    func asyncFrames() async throws {
        let clock = SDAnimatedImageManualClock()
        let player = try #require(SDAnimatedImagePlayer(image: try memoryAnimation(3, loops: 1), clock: clock))
        let stream = player.frames
        player.startPlaying()
        for _ in 0..<10 { step(player, clock, 0.1) }
        var got: [UInt] = []
        for await f in stream { got.append(f.index) }
        #expect(got == [0, 1, 2])
    }

    @Test("The display clock plays in real time on its queue")
    func displayClock() async throws {
        let player = try #require(SDAnimatedImagePlayer(
            image: try memoryAnimation(3, durations: [0.02, 0.02, 0.02], loops: 1),
            clock: SDAnimatedImageDisplayClock(framesPerSecond: 200)))
        let log = PlayLog()
        log.attach(player)
        player.startPlaying()
        #expect(await eventually(60) { !player.isPlaying })
        #expect(log.frames == [0, 1, 2] && log.loops == [1])
    }
}

extension PlayLog {
    func attachFrame(_ i: UInt) { attach(i) }
}
