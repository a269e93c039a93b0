import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// A view for the WebCache layer: records what it was asked to show, on its queue.
final class TestImageView: SDWebImageView, @unchecked Sendable {
    let sd_webImageState = SDWebImageViewState()
    let sd_viewQueue: SDCallbackQueue
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()
    // on `queue` only
    private(set) var shown: [SDImage?] = []
    private(set) var alphas: [Double] = []
    private(set) var offQueue = 0
    var clock: SDAnimatedImageManualClock?
    var plays = true

    init() {
        queue = DispatchQueue(label: "test.view")
        sd_viewQueue = SDCallbackQueue(dispatchQueue: queue)
        queue.setSpecific(key: key, value: ObjectIdentifier(queue))
    }

    var isOnQueue: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(queue) }
    func sd_display(_ image: SDImage?) {
        if !isOnQueue { offQueue += 1 }
        shown.append(image)
    }
    func sd_display(_ image: SDImage?, alpha: Double) {
        if !isOnQueue { offQueue += 1 }
        alphas.append(alpha)
        if alpha >= 1 { shown.append(image) }
    }
    var sd_playsAnimatedImages: Bool { plays }
    func sd_makeAnimationClock() -> any SDAnimatedImagePlayerClock { clock ?? SDAnimatedImageDisplayClock() }

    /// Run on the view's queue; the test's thread (a cooperative one) waits
    /// without blocking, so suites running meanwhile are not starved.
    func onView<T>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<UncheckedBox<T>, Never>) in
            queue.async { c.resume(returning: UncheckedBox(body())) }
        }.value
    }
    /// The widths of what was shown, nil for "nothing" (our n<i>.jpg are 16+i wide).
    func widths() async -> [Int?] { await onView { self.shown.map { $0?.width } } }
}

/// The completions of sd_setImage calls.
final class SetImageLog: @unchecked Sendable {
    struct Call { let image: SDImage?; let error: (any Error)?; let type: SDImageCacheType; let onViewQueue: Bool }
    private let lock = NSLock()
    private var _calls: [Call] = []
    private var waiters: [(Int, CheckedContinuation<Void, Never>)] = []

    func block(_ view: TestImageView) -> SDExternalCompletionBlock {
        { [weak view] image, error, type, _ in
            let on = view?.isOnQueue ?? true
            self.lock.lock()
            self._calls.append(Call(image: image, error: error, type: type, onViewQueue: on))
            let n = self._calls.count
            let ready = self.waiters.filter { $0.0 <= n }
            self.waiters.removeAll { $0.0 <= n }
            self.lock.unlock()
            for (_, c) in ready { c.resume() }
        }
    }

    func wait(count: Int = 1) async {
        await withCheckedContinuation { c in
            lock.lock()
            if _calls.count >= count { lock.unlock(); c.resume(); return }
            waiters.append((count, c))
            lock.unlock()
        }
    }

    var calls: [Call] { lock.lock(); defer { lock.unlock() }; return _calls }
    var last: Call? { calls.last }
    var sdError: SDWebImageError? { last?.error as? SDWebImageError }
}

@Suite("The WebCache layer: sd_setImage on a view (ports of SDWebCacheCategoriesTests)")
struct WebCacheTests {
    let servers = TestServers.shared

    func n(_ i: Int) throws -> URL { let s = try #require(servers); return s.url(s.http, "/img/n\(i).jpg") }
    /// The same image, dripping in over ~0.2-0.4 s from the fault server.
    func slow(_ i: Int) throws -> URL {
        let s = try #require(servers)
        return s.url(s.fault, "/drip-file?name=img/n\(i).jpg&piece=64&gap=25")
    }
    func context(_ m: SDWebImageManager, _ extra: SDWebImageContext = [:]) -> SDWebImageContext {
        extra.merging([.customManager: m]) { a, _ in a }
    }
    func placeholder() throws -> SDImage { try #require(SDImage(data: try TestServers.jpeg(width: 5, height: 5, progressive: false))) }

    @Test("The placeholder first, then the image, on the view's queue; sd_imageURL and the progress")
    func setImageWithURL() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        let log = SetImageLog()
        let url = try n(3)
        let ph = try placeholder()
        await view.onView { view.sd_setImage(with: url, placeholderImage: ph, context: context(m), completed: log.block(view)) }
        #expect(view.sd_imageURL == url)
        #expect(view.sd_latestOperationKey == "TestImageView")  // the view's type name by default
        await log.wait()
        #expect(await view.widths() == [5, 19])
        let call = try #require(log.last)
        #expect(call.image?.width == 19 && call.error == nil && call.type == .none && call.onViewQueue)
        #expect(view.sd_imageProgress.fractionCompleted == 1 && view.sd_imageProgress.totalUnitCount > 0)
        #expect(await view.onView { view.offQueue } == 0)
        #expect(view.sd_imageLoadOperation(forKey: view.sd_latestOperationKey) == nil)  // removed when finished
        // a memory hit on the view's queue is set in the same call (SDWebImage's QueryMemoryData path)
        let shownNow = await view.onView { () -> Int? in
            view.sd_setImage(with: url, context: context(m))
            return view.shown.last??.width
        }
        #expect(shownNow == 19)
    }

    @Test("Reuse: a view asked for A then B at once ends on B and never shows A after B was asked for")
    func reuseNeverFlashes() async throws {
        let (m, _) = makeManager()
        for round in 0..<6 {
            let view = TestImageView()
            let log = SetImageLog()
            // A slow then B fast, and A fast (from memory after round 0) then B slow
            let (a, b, aw, bw) = round % 2 == 0 ? (try slow(0), try n(1), 16, 17) : (try n(2), try slow(4), 18, 20)
            let asked = await view.onView { () -> Int in
                view.sd_setImage(with: a, context: context(m), completed: log.block(view))
                let mark = view.shown.count
                view.sd_setImage(with: b, context: context(m), completed: log.block(view))
                return mark
            }
            await log.wait(count: 2)
            try await Task.sleep(nanoseconds: 100_000_000)  // a late A would land here
            let after = Array(await view.widths()[asked...])
            #expect(!after.contains(aw), "round \(round): A shown after B was asked: \(after)")
            #expect(after.last == bw)
            #expect(view.sd_imageURL == b)
            // A's completion came (cancelled, or its image when it was already in), B's with its image
            #expect(log.calls.contains { $0.image?.width == bw })
        }
    }

    @Test("Reuse: A's result already queued on the busy view queue when B is asked for is dropped, not shown")
    func reuseDropsQueuedResult() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        let log = SetImageLog()
        await view.onView {
            view.sd_setImage(with: try! n(1), context: context(m), completed: log.block(view))
            // A loads meanwhile; its result waits for this block to end
            // (a machine too busy to load 600 bytes in 1 s cancels A instead)
            Thread.sleep(forTimeInterval: 1)
            view.sd_setImage(with: try! slow(2), context: context(m), completed: log.block(view))
        }
        await log.wait(count: 2)
        let a = try #require(log.calls.first)
        #expect(a.image?.width == 17 || (a.error as? SDWebImageError)?.code == .cancelled)
        let widths = await view.widths()
        #expect(!widths.contains(17), "A was put on the view after B was asked: \(widths)")
        #expect(widths.last == 18)
    }

    @Test("A new load cancels the previous one with the same key; another key or .avoidAutoCancelImage does not")
    func autoCancelAndKeys() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        let first = SetImageLog(), second = SetImageLog()
        await view.onView {
            view.sd_setImage(with: try! slow(5), context: context(m), completed: first.block(view))
            view.sd_setImage(with: try! n(6), context: context(m), completed: second.block(view))
        }
        await first.wait()
        await second.wait()
        #expect(first.sdError?.code == .cancelled)
        #expect(second.last?.image?.width == 22)

        let v2 = TestImageView()
        let a = SetImageLog(), b = SetImageLog()
        await v2.onView {
            v2.sd_setImage(with: try! slow(5), options: [.avoidAutoCancelImage], context: context(m), completed: a.block(v2))
            v2.sd_setImage(with: try! n(6), options: [.avoidAutoCancelImage], context: context(m), completed: b.block(v2))
        }
        await a.wait()
        await b.wait()
        #expect(a.last?.image?.width == 21 && b.last?.image?.width == 22)  // both alive
        #expect(await v2.widths().last == 22)  // only the newest sets the view

        let v3 = TestImageView()
        let c = SetImageLog(), d = SetImageLog()
        await v3.onView {
            v3.sd_setImage(with: try! slow(7), context: context(m, [.setImageOperationKey: "background"]),
                           completed: c.block(v3))
            v3.sd_setImage(with: try! n(0), context: context(m, [.setImageOperationKey: "image"]), completed: d.block(v3))
            #expect(v3.sd_latestOperationKey == "image")
        }
        await c.wait()
        await d.wait()
        #expect(c.last?.image?.width == 23 && d.last?.image?.width == 16)
    }

    @Test("sd_cancelCurrentImageLoad: the completion gets cancelled, the operation is gone; delayPlaceholder shows then")
    func cancelCurrent() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        let log = SetImageLog()
        let ph = try placeholder()
        await view.onView {
            view.sd_setImage(with: try! slow(1), placeholderImage: ph, options: [.delayPlaceholder], context: context(m),
                             completed: log.block(view))
            #expect(view.sd_imageLoadOperation(forKey: view.sd_latestOperationKey) != nil)
            #expect(view.shown.isEmpty)  // delayed
            view.sd_cancelCurrentImageLoad()
            #expect(view.sd_imageLoadOperation(forKey: view.sd_latestOperationKey) == nil)
        }
        await log.wait()
        #expect(log.sdError?.code == .cancelled)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(await view.widths() == [5])  // the placeholder, once the load failed
    }

    @Test("Placeholder and delayPlaceholder on a failed load; a nil URL is invalidURL")
    func placeholders() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let ph = try placeholder()
        let missing = s.url(s.http, "/img/missing.jpg")
        let v1 = TestImageView(), l1 = SetImageLog()
        await v1.onView { v1.sd_setImage(with: missing, placeholderImage: ph, context: context(m), completed: l1.block(v1)) }
        await l1.wait()
        let w1 = await v1.widths()
        #expect(l1.last?.error != nil && w1 == [5])  // shown at once, kept
        let v2 = TestImageView(), l2 = SetImageLog()
        await v2.onView {
            v2.sd_setImage(with: missing, placeholderImage: ph, options: [.delayPlaceholder], context: context(m),
                           completed: l2.block(v2))
            #expect(v2.shown.isEmpty)
        }
        await l2.wait()
        #expect(await v2.widths() == [5])  // only after the failure
        let v3 = TestImageView(), l3 = SetImageLog()
        await v3.onView { v3.sd_setImage(with: nil, placeholderImage: ph, context: context(m), completed: l3.block(v3)) }
        await l3.wait()
        let w3 = await v3.widths()
        #expect(l3.sdError?.code == .invalidURL && w3 == [5] && v3.sd_imageURL == nil)
        // a reused view shows the (nil) placeholder at once: the old image is gone before the new one comes
        let v4 = TestImageView(), l4 = SetImageLog()
        await v4.onView { v4.sd_setImage(with: try! n(2), context: context(m), completed: l4.block(v4)) }
        await l4.wait()
        // the new image's last piece is held until the check is made, however loaded the machine
        let gate = UUID().uuidString
        defer { _ = servers?.faultGet("/open?gate=\(gate)") }
        let held = try #require(URL(string: try slow(3).absoluteString + "&gate=\(gate)"))
        await v4.onView { v4.sd_setImage(with: held, context: context(m), completed: l4.block(v4)) }
        #expect(await v4.widths().last == .some(nil))
        _ = servers?.faultGet("/open?gate=\(gate)")
        await l4.wait(count: 2)
        #expect(await v4.widths().last == 19)
    }

    @Test(".avoidAutoSetImage: the completion gets the image, the view keeps the placeholder")
    func avoidAutoSetImage() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        let log = SetImageLog()
        let ph = try placeholder()
        await view.onView {
            view.sd_setImage(with: try! n(7), placeholderImage: ph, options: [.avoidAutoSetImage], context: context(m),
                             completed: log.block(view))
        }
        await log.wait()
        #expect(log.last?.image?.width == 23)
        #expect(await view.widths() == [5])
    }

    @Test("The view is gone: its load is cancelled and nothing is set or called")
    func cancelOnDealloc() async throws {
        // the stalled body must outlast a starved machine's slowest step
        // (the default 15 s idle timeout once ended the load first under TSan)
        // (and a body that ended after 60 s once completed the load first: the
        // held drip's last piece waits for the test, however long it takes)
        let s = try #require(servers)
        let held = HeldDrip(s, tag: "webcache-\(UUID().uuidString)")
        defer { held.open() }
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        let called = Counter()
        var view: TestImageView? = TestImageView()
        weak let weakView = view
        let queue = view!.queue
        let load = try #require(await startSlow(on: view!, m, called, url: held.url))
        await withCheckedContinuation { c in queue.async { c.resume() } }  // the placeholder step ran
        view = nil
        for _ in 0..<6000 where weakView != nil { try await Task.sleep(nanoseconds: 10_000_000) }  // GCD releases run blocks a moment later
        #expect(weakView == nil)
        #expect(load.isCancelled)
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(called.value == 0)  // SDWebImage's `if (!sself) return`
    }

    func startSlow(on v: TestImageView, _ m: SDWebImageManager, _ called: Counter, url: URL) async
        -> SDWebImageCombinedOperation? {
        await v.onView {
            // a body held until the test opens its gate: the load cannot end before the view does
            v.sd_internalSetImage(with: url,
                                  placeholderImage: nil, options: [], context: context(m),
                                  setImageBlock: nil, progress: nil) { _, _, _, _, _, _ in called.add() }
        }
    }

    @Test(".progressiveLoad: previews set in order, then the image; one completion")
    func progressivePreviews() async throws {
        let s = try #require(servers)
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        let view = TestImageView()
        let log = SetImageLog()
        let held = HeldDrip(s)
        defer { held.open() }
        let url = held.url
        await view.onView { view.sd_setImage(with: url, options: [.progressiveLoad], context: context(m), completed: log.block(view)) }
        #expect(await eventuallyAsync(600) { await view.onView { view.shown.contains { $0?.isIncremental == true } } },
                "a preview shown before the last piece")
        held.open()
        await log.wait()
        try await Task.sleep(nanoseconds: 50_000_000)
        let shown = await view.onView { view.shown }
        #expect(log.calls.count == 1 && log.last?.error == nil)
        let final = try #require(log.last?.image)
        #expect(shown.first! == nil)  // the nil placeholder
        #expect(shown.last!! === final)
        let previews = shown.dropFirst().dropLast()
        #expect(previews.allSatisfy { $0?.isIncremental == true })
        #expect(!previews.isEmpty, "the progressive JPEG drips in 2 KiB pieces: at least one preview")
    }

    @Test("A transition: alpha frames rising to 1 over its duration, for network images (cache hits with .forceTransition)")
    func transitionFrames() async throws {
        let (m, _) = makeManager()
        let view = TestImageView()
        view.sd_imageTransition = SDWebImageTransition(duration: 0.1, framesPerSecond: 50, curve: .linear)
        let log = SetImageLog()
        let url = try n(4)
        await view.onView { view.sd_setImage(with: url, options: [.waitTransition], context: context(m), completed: log.block(view)) }
        await log.wait()
        // with .waitTransition the completion comes after the last frame
        let alphas = await view.onView { view.alphas }
        #expect(alphas.count == 6 && alphas.first == 0 && alphas.last == 1)
        #expect(zip(alphas, alphas.dropFirst()).allSatisfy { $0 < $1 })
        #expect(await view.widths().last == 20)
        // a memory hit: no transition...
        let hit = SetImageLog()
        await view.onView { view.sd_setImage(with: url, context: context(m), completed: hit.block(view)) }
        await hit.wait()
        let alphaCount = await view.onView { view.alphas.count }
        #expect(hit.last?.type == .memory && alphaCount == 6)
        // ...unless forced
        let forced = SetImageLog()
        await view.onView {
            view.sd_setImage(with: url, options: [.forceTransition, .waitTransition], context: context(m),
                             completed: forced.block(view))
        }
        await forced.wait()
        #expect(await view.onView { view.alphas.count } == 12)
        // a newer load stops a running transition
        let v2 = TestImageView()
        v2.sd_imageTransition = SDWebImageTransition(duration: 30, framesPerSecond: 10)  // far longer than a starved machine needs for the next step
        let l2 = SetImageLog()
        await v2.onView { v2.sd_setImage(with: try! n(5), context: context(m, [.queryCacheType: SDImageCacheType.none]), completed: l2.block(v2)) }
        await l2.wait()
        await v2.onView { v2.sd_setImage(with: url, context: context(m), completed: l2.block(v2)) }
        await l2.wait(count: 2)
        try await Task.sleep(nanoseconds: 100_000_000)
        let a2 = await v2.onView { v2.alphas }
        #expect(!a2.contains(1), "the 30 s fade of n5 stopped when n4 came: \(a2.count) frames")
        #expect(await v2.widths().last == 20)
    }

    @Test("An animated GIF plays on the view, frame by frame on its clock; a new load stops it")
    func animatedImagePlays() async throws {
        let s = try #require(servers)
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 3 })
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
        let dir = s.www.appendingPathComponent("anim")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try data.write(to: dir.appendingPathComponent("webcache.gif"))
        let url = s.url(s.http, "/anim/webcache.gif")
        let (m, _) = makeManager()
        let view = TestImageView()
        let clock = SDAnimatedImageManualClock()
        view.clock = clock
        let log = SetImageLog()
        await view.onView { view.sd_setImage(with: url, context: context(m), completed: log.block(view)) }
        await log.wait()
        let player = try #require(view.sd_webImageState.animationPlayer)
        #expect(player.isPlaying && clock.isRunning)
        let before = await view.onView { view.shown.count }
        for _ in 0..<(row.frames * 2) {
            player.waitForBufferedFrames()
            clock.advance(by: 0.2)  // at least one frame's duration (≥ 0.1 s shown) per step
        }
        view.queue.sync {}
        let frames = await view.onView { Array(view.shown[before...]) }
        #expect(frames.count >= row.frames, "frames shown: \(frames.count)")
        #expect(Set(frames.compactMap { $0.map(sha) }).count >= 2)  // the picture changes
        // a still image on the view stops the animation
        let still = SetImageLog()
        await view.onView { view.sd_setImage(with: try! n(1), context: context(m), completed: still.block(view)) }
        await still.wait()
        #expect(!player.isPlaying && view.sd_webImageState.animationPlayer == nil)
        let count = await view.onView { view.shown.count }
        clock.advance(by: 1)
        view.queue.sync {}
        #expect(await view.onView { view.shown.count } == count)
    }

    @Test("1,000 rapid reuses over a few views: each ends on its last URL, nothing left running or alive")
    func rapidReuse() async throws {
        let (m, _) = makeManager()
        var views: [TestImageView] = (0..<10).map { _ in TestImageView() }
        let weakViews = views.map { WeakBox($0) }
        let logs = views.map { _ in SetImageLog() }
        for i in 0..<1000 {
            let v = i % 10
            let url = try n((i / 10) % 8)
            let view = views[v], log = logs[v]
            await view.onView { view.sd_setImage(with: url, context: context(m), completed: log.block(view)) }
        }
        for v in 0..<10 { await logs[v].wait(count: 100) }
        try await Task.sleep(nanoseconds: 100_000_000)
        for v in 0..<10 {
            #expect(await views[v].widths().last == 16 + (990 / 10) % 8)
            #expect(views[v].sd_imageLoadOperation(forKey: views[v].sd_latestOperationKey) == nil)
            let view = views[v]
            #expect(await view.onView { view.offQueue } == 0)
        }
        #expect(!m.isRunning)
        views.removeAll()
        // the blocks that ran on the views' queues are released by GCD's
        // threads just after they ran: give them a moment
        for _ in 0..<6000 where !weakViews.allSatisfy({ $0.value == nil }) {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(weakViews.allSatisfy { $0.value == nil })
    }
}

struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

final class WeakBox<T: AnyObject> {
    weak var value: T?
    init(_ v: T) { value = v }
}
