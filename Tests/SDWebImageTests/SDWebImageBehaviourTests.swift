import Dispatch
import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import Testing

/// Records a loader's contexts (testUIViewOperationKeyContextWorks's loader).
final class ContextLoader: SDImageLoader, @unchecked Sendable {
    private let lock = NSLock()
    private var _contexts: [SDWebImageContext] = []
    var contexts: [SDWebImageContext] { lock.lock(); defer { lock.unlock() }; return _contexts }
    func canRequestImage(for url: URL?) -> Bool { true }
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        lock.lock(); _contexts.append(context ?? [:]); lock.unlock()
        let data = try? TestServers.jpeg(width: 7, height: 7, progressive: false)
        completed?(data.flatMap { SDImage(data: $0) }, data, nil, true)
        return nil
    }
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool { false }
}

/// A loader whose loads answer only when released, cancelled or not (a
/// loader that answers a cancel late).
final class HeldLoader: SDImageLoader, @unchecked Sendable {
    final class Op: SDWebImageOperation, @unchecked Sendable { func cancel() {} }
    private let lock = NSLock()
    private var held: [SDImageLoaderCompletedBlock] = []
    func canRequestImage(for url: URL?) -> Bool { true }
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        if let completed { lock.lock(); held.append(completed); lock.unlock() }
        return Op()
    }
    func release() {
        lock.lock(); let h = held; held = []; lock.unlock()
        for c in h { c(nil, nil, SDWebImageError(.cancelled), true) }
    }
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool { false }
}

/// What SDWebImage's own tests expect of its player, coders and view
/// category, where ours differed (issue 38). Each test fails with its fix
/// taken out.
@Suite("SDWebImage behaviours from its own tests (issue 38)")
struct SDWebImageBehaviourTests {
    let servers = TestServers.shared

    func gifRow() throws -> (AnimRow, Data) {
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 4 && $0.expected.count == $0.frames })
        return (row, try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file)))
    }

    @Test("A whole GIF decoded with .decodeFirstFrameOnly is complete: the cache decodes it, so a disk query with it hits")
    func firstFrameOnlyComplete() throws {
        let (_, data) = try gifRow()
        var o = DecodeOptions()
        o.firstFrameOnly = true
        let decoded = try ImageDecoder.decode([UInt8](data), options: o)
        #expect(decoded.isComplete)
        let image = try #require(SDImageCacheDecodeImageData(data, "k", [.decodeFirstFrameOnly], nil))
        #expect(!image.sd_isAnimated)
        // a disk hit with the option is a hit, not a miss that downloads again
        let cache = makeCache()
        try cache.storeImageData(toDisk: data, forKey: "gif")
        let hit = cache.imageFromDiskCache(forKey: "gif", options: [.decodeFirstFrameOnly], context: nil)
        #expect(hit != nil && hit?.sd_isAnimated == false)
    }

    @Test("maxBufferSize under two frames (one frame's bytes, 1 byte) still plays every frame in order")
    func tinyBuffer() throws {
        for budget in [8 * 8 * 4, 1] {
            let clock = SDAnimatedImageManualClock()
            let player = try #require(SDAnimatedImagePlayer(image: try memoryAnimation(5, loops: 1), clock: clock))
            player.maxBufferSize = budget
            let log = PlayLog()
            log.attach(player)
            player.startPlaying()
            for _ in 0..<30 where player.isPlaying {
                player.waitForBufferedFrames()
                clock.advance(by: 0.1)
            }
            #expect(log.frames == [0, 1, 2, 3, 4], "budget \(budget): \(log.frames)")
            #expect(player.peakBufferedBytes <= 8 * 8 * 4)
        }
    }

    @Test("test29: seeking to a decoded frame shows it at once (the handler and frames get it before any tick)")
    func seekShowsAtOnce() throws {
        let (row, data) = try gifRow()
        let clock = SDAnimatedImageManualClock()
        let image = try #require(SDAnimatedImage(data: data))
        let player = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
        player.maxBufferSize = 1 << 30  // every frame fits: each is decoded ahead
        let log = PlayLog()
        log.attach(player)
        player.startPlaying()
        for _ in 0..<row.frames {  // play one loop: every frame decoded once
            player.waitForBufferedFrames()
            clock.advance(by: 10)
        }
        player.pausePlaying()
        player.waitForBufferedFrames()
        let before = log.frames.count
        let target = UInt(row.frames - 1)
        player.seekToFrame(at: target, loopCount: 0)
        // no tick happened: the handler was called by the seek itself
        #expect(log.frames.count == before + 1 && log.frames.last == target)
        #expect(player.currentFrame.map(sha) == row.expected[Int(target)].sha)
    }

    @Test("test26: stop resets the status; start shows frame 0 again at its first tick")
    func stopThenStart() throws {
        let clock = SDAnimatedImageManualClock()
        let player = try #require(SDAnimatedImagePlayer(image: try memoryAnimation(4), clock: clock))
        let log = PlayLog()
        log.attach(player)
        player.startPlaying()
        for _ in 0..<3 { player.waitForBufferedFrames(); clock.advance(by: 0.1) }
        #expect(log.frames == [0, 1, 2])
        player.stopPlaying()
        #expect(player.currentFrameIndex == 0 && player.currentFrame == nil)
        player.startPlaying()
        player.waitForBufferedFrames()
        clock.advance(by: 0)  // the first tick after start
        #expect(log.frames == [0, 1, 2, 0] && player.currentFrameIndex == 0 && player.currentFrame != nil)
    }

    @Test(".encodeBackgroundColor as UInt32 (its documented type) and other integer types flattens alpha on that colour")
    func backgroundColorTypes() throws {
        // left half transparent, right half opaque grey
        let bitmap = try Bitmap(width: 16, height: 8) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for y in 0..<8 { for x in 0..<16 { p[y * 16 + x] = x < 8 ? 0 : 0xFF80_8080 } }
        }
        let image = SDImage(bitmap: bitmap)
        let values: [any Sendable] = [UInt32(0xFF0000), Int(0xFF0000), UInt(0xFF0000), Int64(0xFF0000), Int32(0xFF0000)]
        for v in values {
            let data = try #require(SDImageCodersManager.shared.encodedData(
                with: image, format: .jpeg, options: [.encodeBackgroundColor: v]))
            let back = try #require(SDImage(data: data))
            let left = pixel(back, 2, 4)
            let r = (left >> 16) & 0xFF, g = (left >> 8) & 0xFF, b = left & 0xFF
            #expect(r > 200 && g < 60 && b < 60, "\(type(of: v)): \(String(left, radix: 16))")
        }
    }

    @Test("sd_imageData(as:) encodes through SDImageCodersManager: GIF, WebP and AVIF too, an animation stays one")
    func imageDataAsFormat() throws {
        let still = SDImage(bitmap: try Bitmap(width: 12, height: 10) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for i in 0..<120 { p[i] = 0xFF00_0000 | UInt32(i * 2) }
        })
        for format in [SDImageFormat.gif, .webP, .avif, .png, .jpeg] {
            let data = try #require(still.sd_imageData(as: format), "\(format)")
            let back = try #require(SDImage(data: data), "\(format)")
            #expect(back.format == format && back.width == 12 && back.height == 10)
        }
        let colours: [UInt32] = [0xFFFF_0000, 0xFF00_FF00, 0xFF00_00FF]
        let animation = try #require(SDImage.animatedImage(with: try colours.map { c in
            SDImageFrame(image: SDImage(bitmap: try Bitmap(width: 8, height: 8) { raw in
                let p = raw.bindMemory(to: UInt32.self)
                for i in 0..<64 { p[i] = c }
            }), duration: 0.1)
        }, loopCount: 0))
        for format in [SDImageFormat.gif, .webP] {
            let data = try #require(animation.sd_imageData(as: format))
            #expect(SDAnimatedImage(data: data)?.animatedImageFrameCount == 3, "\(format)")
            let first = try #require(animation.sd_imageData(as: format, firstFrameOnly: true))
            #expect(SDImage(data: first)?.sd_isAnimated == false, "\(format)")
        }
    }

    @Test("testUIViewCancelWithDelayPlaceholderShouldCallbackOnceBeforeSecond: the cancelled load's placeholder and completion come before the second load's first step")
    func cancelBeforeSecond() async throws {
        let s = try #require(servers)
        let (m, cache) = makeManager()
        let ph = try #require(SDImage(data: try TestServers.jpeg(width: 5, height: 5, progressive: false)))
        // the first load is cancelled in each of its phases: querying the disk
        // (a large image to decode there), and downloading
        let onDisk = s.url(s.http, "/img/n3.jpg?on-disk")
        try cache.storeImageData(toDisk: try TestServers.jpeg(width: 1500, height: 1500, progressive: false),
                                 forKey: m.cacheKey(for: onDisk))
        let dripping = s.url(s.fault, "/drip-file?name=img/n1.jpg&piece=64&gap=25")
        // and in a loader that answers its cancel late
        let held = HeldLoader()
        let heldManager = SDWebImageManager(cache: makeCache(), loader: held)
        let late = URL(string: "held://late.jpg")!
        for (first, onViewQueue) in [(onDisk, true), (dripping, true), (late, true), (onDisk, false), (dripping, false), (late, false)] {
            cache.clearMemory()
            let firstManager = first == late ? heldManager : m
            let view = TestImageView()
            let order = OrderLog()
            let done = SetImageLog()
            let calls: @Sendable () -> Void = {
                view.sd_internalSetImage(with: first, placeholderImage: ph, options: [.delayPlaceholder],
                                         context: [.customManager: firstManager],
                                         setImageBlock: { image, _, _, _ in order.add("first set \(image?.width ?? -1)") },
                                         progress: nil) { _, _, error, _, finished, _ in
                    order.add("first completed \(finished) \((error as? SDWebImageError)?.code == .cancelled)")
                }
                view.sd_internalSetImage(with: s.url(s.http, "/img/n2.jpg"), placeholderImage: nil, options: [],
                                         context: [.customManager: m],
                                         setImageBlock: { image, _, _, _ in order.add("second set \(image?.width ?? -1)") },
                                         progress: nil) { image, _, _, cacheType, finished, url in
                    order.add("second completed \(finished)")
                    done.block(view)(image, nil, cacheType, url)
                }
            }
            if onViewQueue { await view.onView(calls) } else { calls() }  // SDWebImage's test calls from its main thread
            await done.wait()
            held.release()  // the loader's own late answer to the cancel: not a second completion
            try await Task.sleep(nanoseconds: 100_000_000)  // a late second answer to the first load would show here
            #expect(order.items == ["first set 5", "first completed true true", "second set -1", "second set 18",
                                    "second completed true"], "\(first) on the view's queue: \(onViewQueue): \(order.items)")
        }
    }

    @Test("testUIViewOperationKeyContextWorks: the context passed down carries the view's operation key, not the custom manager")
    func operationKeyInContext() async throws {
        let loader = ContextLoader()
        let manager = SDWebImageManager(cache: makeCache(), loader: loader)
        let view = TestImageView()
        let log = SetImageLog()
        await view.onView {
            view.sd_setImage(with: URL(string: "test://a.jpg"), context: [.customManager: manager, .setImageOperationKey: "k1"],
                             completed: log.block(view))
        }
        await log.wait()
        let log2 = SetImageLog()
        await view.onView {
            view.sd_setImage(with: URL(string: "test://b.jpg"), context: [.customManager: manager], completed: log2.block(view))
        }
        await log2.wait()
        let contexts = loader.contexts
        #expect(contexts.count == 2)
        #expect(contexts.first?[.setImageOperationKey] as? String == "k1")
        #expect(contexts.last?[.setImageOperationKey] as? String == String(describing: TestImageView.self))
        #expect(contexts.allSatisfy { $0[.customManager] == nil })
    }

    @Test("testUIViewTransitionFromDiskWork: an asynchronous disk hit fades in; a memory hit and a .queryDiskDataSync disk hit do not")
    func transitionFromDisk() async throws {
        let (m, cache) = makeManager()
        let url = URL(string: "http://127.0.0.1:9/disk-only.jpg")!  // never fetched: the disk has it
        try cache.storeImageData(toDisk: try TestServers.jpeg(width: 9, height: 9, progressive: false),
                                 forKey: m.cacheKey(for: url))
        func load(_ options: SDWebImageOptions) async throws -> (SDImageCacheType?, [Double]) {
            let view = TestImageView()
            view.sd_imageTransition = SDWebImageTransition(duration: 0.05, framesPerSecond: 100, curve: .linear)
            let log = SetImageLog()
            await view.onView { view.sd_setImage(with: url, options: options.union(.waitTransition), context: [.customManager: m], completed: log.block(view)) }
            await log.wait()
            return (log.last?.type, await view.onView { view.alphas })
        }
        cache.clearMemory()
        let (t1, a1) = try await load([])
        #expect(t1 == .disk && a1.count == 6 && a1.last == 1, "async disk hit: \(a1)")
        let (t2, a2) = try await load([])
        #expect(t2 == .memory && a2.isEmpty)
        cache.clearMemory()
        let (t3, a3) = try await load([.queryDiskDataSync])
        #expect(t3 == .disk && a3.isEmpty)
    }
}

/// Events in the order they happened.
final class OrderLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _items: [String] = []
    var items: [String] { lock.lock(); defer { lock.unlock() }; return _items }
    func add(_ s: String) { lock.lock(); _items.append(s); lock.unlock() }
}
