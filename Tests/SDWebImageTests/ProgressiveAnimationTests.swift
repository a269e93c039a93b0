import Foundation
import SDTestSupport
@testable import SDWebImage
import SDWebImageTestSupport
import Testing

/// Feeds `data` to `coder` in pieces (sizes from `sizes`), handing each
/// partial image to `seen` with the bytes given so far.
func feed(_ data: Data, to coder: any SDProgressiveImageCoder, sizes: (Int) -> Int,
          _ seen: (SDImage?, _ given: Int, _ finished: Bool) throws -> Void) rethrows {
    var given = 0
    while given < data.count {
        given = min(data.count, given + max(1, sizes(given)))
        let finished = given == data.count
        coder.updateIncrementalData(data.prefix(given), finished: finished)
        try seen(coder.incrementalDecodedImage(options: nil), given, finished)
    }
}

@Suite("Progressive animated decode (ports of SDAnimatedImageTest test21, test23, test27)")
struct ProgressiveAnimationTests {
    /// The built-in coder class for a corpus-anim format.
    func coder(_ format: String) -> any SDProgressiveImageCoder {
        switch format {
        case "gif": return SDImageGIFCoder(incrementalWithOptions: nil)
        case "webp": return SDImageWebPCoder(incrementalWithOptions: nil)
        default: return SDImageAPNGCoder(incrementalWithOptions: nil)
        }
    }

    @Test("An incremental coder of an animated format is a frame source over the bytes so far: every corpus-anim animation, fed in pieces and a byte at a time, grows to all its frames, each the oracle's")
    func coderGrows() throws {
        let rows = AnimRow.load().filter { ["gif", "webp", "apng"].contains($0.format) && $0.frames >= 2 }
        try #require(rows.count > 100, "corpus-anim not found at \(corpusAnim)")
        var rng = SplitMix(seed: 27)
        var byteByByte = Set<String>()
        for row in rows {
            let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
            // one small file per format a byte at a time, the rest in random pieces
            let single = data.count < 4096 && byteByByte.insert(row.format).inserted
            let coder = coder(row.format)
            var shown = 0      // frames the partial images had
            var partials = 0   // animated partial images seen before the end
            try feed(data, to: coder, sizes: { _ in single ? 1 : Int(rng.next() % UInt64(data.count / 6 + 1)) + 1 }) {
                image, _, finished in
                guard let animated = image as? SDAnimatedImage else {
                    #expect(!finished, "\(row.file): the whole file gives an animation")
                    #expect(shown == 0, "\(row.file): once animated, every later image is")
                    return
                }
                #expect(animated.isIncremental == !finished, "\(row.file)")
                #expect(animated.animatedCoder === coder, "\(row.file): the coder is the frame source (test28's one coder)")
                let n = Int(animated.animatedImageFrameCount)
                #expect(n >= shown && n <= row.frames, "\(row.file): the frame count never shrinks")
                if !finished { partials += 1 }
                for i in shown..<n {
                    let frame = try #require(animated.animatedImageFrame(at: UInt(i)), "\(row.file) frame \(i) of \(n)")
                    #expect(sha(frame) == row.expected[i].sha, "\(row.file) frame \(i) with \(n) in")
                    #expect(Int((animated.animatedImageDuration(at: UInt(i)) * 1000).rounded()) == row.expected[i].ms)
                }
                shown = max(shown, n)
                if finished { #expect(Int(animated.animatedImageLoopCount) == row.loop, "\(row.file)") }
            }
            #expect(shown == row.frames, "\(row.file)")
            // an APNG's frames count once the whole file has checked out (a broken
            // animation falls back to the still default image)
            if single && row.format != "apng" {
                #expect(partials >= row.frames - 1, "\(row.file): a byte at a time shows every frame count on the way")
            }
        }
        #expect(byteByByte == ["gif", "webp", "apng"])
    }

    @Test("decodeFirstFrameOnly and still coders keep an incremental decode a still image")
    func firstFrameOnly() throws {
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 3 })
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
        for coder in [SDImageGIFCoder(incrementalWithOptions: [.decodeFirstFrameOnly: true]) as any SDProgressiveImageCoder,
                      SDImageIOCoder(incrementalWithOptions: nil)] where coder.canIncrementalDecode(from: data) || coder is SDImageGIFCoder {
            var last: SDImage?
            feed(data, to: coder, sizes: { _ in data.count / 5 + 1 }) { image, _, _ in
                #expect(!(image is SDAnimatedImage))
                last = image
            }
            #expect(last.map(sha) == row.expected[0].sha)
        }
    }

    @Test("test27: a player of a progressive animation holds the last frame that arrived, goes on as frames come, and never goes back")
    func playerFollowsGrowth() throws {
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 6 && $0.loop == 0 })
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
        let coder = SDImageGIFCoder(incrementalWithOptions: nil)
        let clock = SDAnimatedImageManualClock()
        var player: SDAnimatedImagePlayer?
        let log = PlayLog()
        var counts: [UInt] = []
        try feed(data, to: coder, sizes: { _ in data.count / 40 + 1 }) { image, _, finished in
            guard let image = image as? SDAnimatedImage, image.animatedImageFrameCount >= 2 else { return }
            if let player {
                #expect(player.update(with: image))
                #expect(player.waitsForMoreFrames == !finished)
            } else {
                let p = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
                #expect(p.waitsForMoreFrames)
                log.attach(p)
                p.startPlaying()
                player = p
            }
            let p = try #require(player)
            counts.append(p.totalFrameCount)
            // plenty of time for every frame that is in: it plays them, then holds the last
            for _ in 0..<(3 * row.frames) {
                p.waitForBufferedFrames()
                clock.advance(by: 0.5)
            }
            if !finished {
                #expect(p.currentFrameIndex == p.totalFrameCount - 1, "holds the last frame that arrived")
                #expect(p.currentLoopCount == 0 && p.isPlaying)
            }
        }
        let p = try #require(player)
        #expect(counts.first! < UInt(row.frames) && counts.last == UInt(row.frames), "\(counts)")
        // frames shown before the data was whole: 0, 1, 2, … in order, none skipped or repeated
        let frames = log.frames
        let firstLoop = Array(frames.prefix(row.frames))
        #expect(firstLoop == (0..<UInt(row.frames)).map { $0 }, "\(frames)")
        // whole: it loops again
        #expect(p.currentLoopCount >= 1 && !p.waitsForMoreFrames)
        // a newer image from another coder is not this animation
        let other = try #require(SDAnimatedImage(data: data))
        #expect(!p.update(with: other))
    }
}

extension ProgressiveAnimationTests {
    /// A corpus-anim file dripping in from the fault server in `pieces` pieces
    /// 30 ms apart, the last held until `open(gate)`: the test looks at the
    /// animation so far when it is there, however loaded the machine (the
    /// suites run in parallel, and under TSan).
    func drip(_ file: String, pieces: Int) throws -> (url: URL, row: AnimRow, gate: String) {
        let s = try #require(TestServers.shared)
        let row = try #require(AnimRow.load().first { $0.file == file }, "\(file) in corpus-anim")
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + file))
        let dir = s.www.appendingPathComponent("drip-anim")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let name = file.replacingOccurrences(of: "/", with: "_")
        try data.write(to: dir.appendingPathComponent(name))
        let gate = UUID().uuidString
        return (s.url(s.fault, "/drip-file?name=drip-anim/\(name)&piece=\(data.count / pieces + 1)&gap=30&gate=\(gate)"),
                row, gate)
    }

    func open(_ gate: String) { _ = TestServers.shared?.faultGet("/open?gate=\(gate)") }

    /// Poll until `ready` (100 s at most).
    func until(_ ready: () async -> Bool) async throws {
        _ = await eventuallyAsync(100, ready)
    }

    @Test("test23/test18: a progressive download of an animated GIF and WebP through the C core — the animation so far (incremental, growing, the oracle's frames, from the core's one decoder), then the whole animation")
    func downloaderPreviews() async throws {
        for file in ["third_party/pillow/chi.gif", "third_party/pillow/iss634.webp"] {
            let (url, row, gate) = try drip(file, pieces: 12)
            defer { open(gate) }
            let downloader = patientDownloader()
            let (out, token) = downloader.start(url, .progressiveLoad)
            let op = try #require(token?.operation as? SDWebImageDownloaderOperation)
            // all but the last piece are in: the animation so far comes out
            try await until { out.previews.contains { ($0 as? SDAnimatedImage)?.animatedImageFrameCount ?? 0 >= 2 } }
            open(gate)
            await out.wait()
            let final = try #require(out.image as? SDAnimatedImage, "\(file): \(String(describing: out.error))")
            #expect(!final.isIncremental && Int(final.animatedImageFrameCount) == row.frames)
            #expect(sha(try #require(final.animatedImageFrame(at: UInt(row.frames - 1)))) == row.expected.last?.sha)
            let previews = out.previews
            let firstAnimated = try #require(previews.firstIndex { $0 is SDAnimatedImage }, "\(file): \(previews)")
            let animated = previews[firstAnimated...].compactMap { $0 as? SDAnimatedImage }
            #expect(animated.count == previews.count - firstAnimated, "\(file): no still preview after the animation")
            #expect(animated.allSatisfy { $0.isIncremental && $0.animatedImageFrameCount >= 2 })
            let counts = animated.map(\.animatedImageFrameCount)
            // a new image only when frames were added; the first before the last frame is in
            #expect(counts == counts.sorted() && Set(counts).count == counts.count && counts.first! < UInt(row.frames),
                    "\(file): \(counts)")
            #expect(Set(animated.map { ObjectIdentifier($0.animatedCoder) }).count == 1, "one coder per download (test28)")
            // decoded once: the frames are the C core's decoder's, nothing in Swift followed the bytes
            #expect(animated.allSatisfy { $0.animatedCoder is AnimationSoFar } && op.swiftPreviews == nil)
            #expect(op.corePreviewCount >= Int(animated.last?.animatedImageFrameCount ?? 0), "\(file): every frame so far came from the core")
            // what differs from test28 (README): the final image is the C core's decode, another coder, same frames
            #expect(final.animatedCoder !== animated.last?.animatedCoder)
            // the frames so far are the oracle's
            let last = try #require(animated.last)
            for i in 0..<Int(last.animatedImageFrameCount) {
                #expect(sha(try #require(last.animatedImageFrame(at: UInt(i)))) == row.expected[i].sha, "\(file) \(i)")
                #expect(Int((last.animatedImageDuration(at: UInt(i)) * 1000).rounded()) == row.expected[i].ms, "\(file) \(i)")
            }
            #expect(last.animatedImageLoopCount == UInt(row.loop) && last.format == final.format, "\(file)")
            #expect(previews.allSatisfy { $0.isIncremental })
        }
        // .decodeFirstFrameOnly: no animation, so far or at the end
        let (url, _, gate) = try drip("third_party/pillow/chi.gif", pieces: 6)
        open(gate)
        let still = await patientDownloader().load(url, [.progressiveLoad, .decodeFirstFrameOnly])
        #expect(still.image?.sd_isAnimated == false && !still.previews.contains { $0 is SDAnimatedImage })
    }

    @Test("A download decoded in Swift follows the body with its progressive coder: an update every 512 bytes, yet the body copied only as it doubled")
    func swiftRouteCopiesAsItDoubles() throws {
        let gif = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/third_party/pillow/chi.gif"))
        let p = SwiftPreviews(SDImageLoaderDecodeOptions(), previews: true)
        var at = 0, frames: UInt = 0
        while at < gif.count {
            let n = min(gif.count - at, 512)
            if gif[at..<(at + n)].withUnsafeBytes({ p.append($0) }), let image = p.update() {
                frames = max(frames, (image as? SDAnimatedImage)?.animatedImageFrameCount ?? 0)
            }
            at += n
        }
        #expect(frames >= 2, "the coder gave the animation so far")
        #expect(gif.count > 64 << 10 && p.bodyBlocks <= 1 + Int(log2(Double(gif.count) / Double(64 << 10)).rounded(.up)))
    }

    @Test("The side coder's bytes: snapshots share the growing body without a copy and later appends never change them")
    func appendOnlyBytes() {
        var rng = SplitMix(seed: 28)
        let whole = Data((0..<(4 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        let bytes = AppendOnlyBytes()
        var kept: [Data] = []
        var at = 0
        while at < whole.count {
            let n = min(whole.count - at, 1 + Int(rng.next() % 3000))
            whole[at..<(at + n)].withUnsafeBytes { bytes.append($0) }
            at += n
            let s = bytes.snapshot()
            #expect(s.count == at)
            if kept.count < 64 && rng.next() % 40 == 0 { kept.append(s) }
        }
        #expect(kept.count > 10)
        for s in kept { #expect(s == whole.prefix(s.count)) }  // untouched by what came after
        #expect(bytes.blocksMade <= 7)  // 64 KiB doubled to 4 MiB: one copy per doubling
        func address(_ d: Data) -> UnsafeRawPointer? { d.withUnsafeBytes { $0.baseAddress } }
        #expect(address(bytes.snapshot()) == address(kept.last!))  // the same block: no copy per look
        var written = bytes.snapshot()
        written[0] ^= 0xFF  // value semantics: the write copies, the shared bytes stay
        #expect(bytes.snapshot()[0] == whole[0] && written[0] != whole[0])
    }

    @Test("test21/test23: sd_setImage with .progressiveLoad plays the animation so far in one player that grows, then the whole one on from the frame on screen")
    func viewPlaysGrowth() async throws {
        let (url, row, gate) = try drip("third_party/pillow/chi.gif", pieces: 12)
        defer { open(gate) }  // a failed check must not leave the server holding the piece
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        let view = TestImageView()
        let clock = SDAnimatedImageManualClock()
        view.clock = clock
        let log = SetImageLog()
        await view.onView {
            view.sd_setImage(with: url, options: [.progressiveLoad], context: [.customManager: m], completed: log.block(view))
        }
        // all but the last piece are in: a player plays the animation so far
        try await until { await view.onView { view.sd_webImageState.animationPlayer?.totalFrameCount ?? 0 } >= 3 }
        let preview = try #require(await view.onView { view.sd_webImageState.animationPlayer })
        #expect(preview.waitsForMoreFrames && preview.totalFrameCount < UInt(row.frames))
        var indices: [UInt] = []
        for _ in 0..<(2 * Int(preview.totalFrameCount) + 4) {
            preview.waitForBufferedFrames()
            clock.advance(by: 0.2)
            indices.append(preview.currentFrameIndex)
        }
        #expect(indices == indices.sorted(), "the frame on screen only moves on: \(indices)")
        #expect(indices.last == preview.totalFrameCount - 1 && preview.currentLoopCount == 0,
                "it holds the last frame that arrived: \(indices)")
        #expect(await view.onView { view.sd_webImageState.animationPlayer } === preview, "one player while the bytes arrive")
        // the frame on screen, from the player on the view: a preview that
        // came late (a slow machine) may have moved the same frame to a new player
        let held = try #require(await view.onView { view.sd_webImageState.animationPlayer?.currentFrameIndex })
        open(gate)
        await log.wait()
        let final = try #require(log.last?.image as? SDAnimatedImage)
        #expect(!final.isIncremental && log.calls.count == 1 && log.last?.type == SDImageCacheType.none)
        let player = try #require(await view.onView { view.sd_webImageState.animationPlayer })
        #expect(player !== preview && player.totalFrameCount == UInt(row.frames) && !player.waitsForMoreFrames)
        #expect(player.currentFrameIndex == held, "the whole animation goes on from the frame on screen")
        let shown = await view.onView { view.shown }
        #expect(shown.compactMap { $0 }.filter { $0 is SDAnimatedImage }.allSatisfy { $0.isIncremental },
                "the final image is not set over the frame on screen (it would show its frame 0)")
    }
}

/// A small seeded generator, so a failing piece pattern can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
