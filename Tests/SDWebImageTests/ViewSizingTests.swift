import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import Testing

/// A view with a size and a scale factor (a HiDPI GTK widget, an SDL window).
final class SizedTestView: SDWebImageView, @unchecked Sendable {
    let sd_webImageState = SDWebImageViewState()
    let sd_viewQueue: SDCallbackQueue
    let queue = DispatchQueue(label: "test.sized-view")
    // on `queue` only
    var size: CGSize?
    var scale = 1.0
    private(set) var shown: [SDImage?] = []
    private(set) var overlays: [SDImage?] = []

    init() { sd_viewQueue = SDCallbackQueue(dispatchQueue: queue) }
    func sd_display(_ image: SDImage?) { shown.append(image) }
    func sd_displayIndicator(_ overlay: SDImage?) { overlays.append(overlay) }
    var sd_viewSize: CGSize? { size }
    var sd_scaleFactor: Double { scale }

    func onView<T>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<UncheckedBox<T>, Never>) in
            queue.async { c.resume(returning: UncheckedBox(body())) }
        }.value
    }
}

/// Completions of one view's loads, awaited by count.
final class CompletionLog: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [(SDImage?, (any Error)?)] = []
    private var waiters: [(Int, CheckedContinuation<Void, Never>)] = []

    var block: SDExternalCompletionBlock {
        { image, error, _, _ in
            self.lock.lock()
            self.results.append((image, error))
            let n = self.results.count
            let ready = self.waiters.filter { $0.0 <= n }
            self.waiters.removeAll { $0.0 <= n }
            self.lock.unlock()
            for (_, c) in ready { c.resume() }
        }
    }
    func wait(count: Int) async {
        await withCheckedContinuation { c in
            lock.lock()
            if results.count >= count { lock.unlock(); c.resume(); return }
            waiters.append((count, c))
            lock.unlock()
        }
    }
    var count: Int { lock.lock(); defer { lock.unlock() }; return results.count }
    var last: (SDImage?, (any Error)?)? { lock.lock(); defer { lock.unlock() }; return results.last }
}

/// Views II: decode to the view's size (HiDPI included), load again when it
/// grows past a threshold, and a failure image distinct from the placeholder.
@Suite("Views II: sized to the view, HiDPI, a failure image, activity indicators", .serialized)
struct ViewSizingTests {
    let servers = TestServers.shared

    /// A 400x300 JPEG on the loopback nginx, its own name per test.
    func photo(_ name: String) throws -> URL {
        let s = try #require(servers)
        try TestServers.jpeg(width: 400, height: 300, progressive: false).write(to: s.www.appendingPathComponent("img/\(name).jpg"))
        return s.url(s.http, "/img/\(name).jpg")
    }

    @Test("fitView: the view's size x its scale factor is the thumbnail box and the image's scale; an explicit box wins")
    func fitViewSizesTheLoad() async throws {
        let url = try photo("fit-view")
        let (m, _) = makeManager()
        let view = SizedTestView()
        view.sd_webImageState.imageSizing = .fitView()
        let log = CompletionLog()
        await view.onView {
            view.size = CGSize(width: 100, height: 50)
            view.scale = 2
            view.sd_setImage(with: url, context: [.customManager: m], completed: log.block)
        }
        await log.wait(count: 1)
        let image = try #require(log.last?.0)
        // 400x300 fit in 200x100 pixels: 133x100, shown at scale 2 (66.5x50 units)
        #expect(image.width == 133 && image.height == 100 && image.scale == 2)
        // the original is another cache entry: an .original view gets the whole image
        let plain = SizedTestView()
        let log2 = CompletionLog()
        await plain.onView { plain.sd_setImage(with: url, context: [.customManager: m], completed: log2.block) }
        await log2.wait(count: 1)
        #expect(log2.last?.0?.width == 400 && log2.last?.0?.height == 300 && log2.last?.0?.scale == 1)
        // an explicit thumbnail box keeps its own size
        let log3 = CompletionLog()
        await view.onView {
            view.sd_setImage(with: url, context: [.customManager: m, .imageThumbnailPixelSize: CGSize(width: 40, height: 40)],
                             completed: log3.block)
        }
        await log3.wait(count: 1)
        #expect(log3.last?.0?.width == 40 && log3.last?.0?.height == 30)
        // a view without a size yet loads the original
        let unsized = SizedTestView()
        unsized.sd_webImageState.imageSizing = .fitView()
        let log4 = CompletionLog()
        await unsized.onView { unsized.sd_setImage(with: url, context: [.customManager: m], completed: log4.block) }
        await log4.wait(count: 1)
        #expect(log4.last?.0?.width == 400)
    }

    @Test("A fitView view that grows past the threshold loads again at its new size, the old image staying until then")
    func growingViewReloads() async throws {
        let url = try photo("grow-view")
        let (m, _) = makeManager()
        let view = SizedTestView()
        view.sd_webImageState.imageSizing = .fitView(reloadAbove: 1.25)
        let log = CompletionLog()
        await view.onView {
            view.size = CGSize(width: 80, height: 60)
            view.sd_setImage(with: url, context: [.customManager: m], completed: log.block)
        }
        await log.wait(count: 1)
        #expect(log.last?.0?.width == 80 && log.last?.0?.height == 60)
        // within the threshold (1.2x), and smaller: no new load
        let small = await view.onView { () -> [Bool] in
            view.size = CGSize(width: 96, height: 72)
            let a = view.sd_viewSizeDidChange()
            view.size = CGSize(width: 40, height: 30)
            return [a, view.sd_viewSizeDidChange()]
        }
        #expect(small == [false, false])
        // past it: loaded again at 200x150, the 80 px image shown as its placeholder
        let (started, shownBefore) = await view.onView { () -> (Bool, Int) in
            view.size = CGSize(width: 200, height: 150)
            return (view.sd_viewSizeDidChange(), view.shown.count)
        }
        #expect(started)
        await log.wait(count: 2)
        #expect(log.last?.0?.width == 200 && log.last?.0?.height == 150)
        let shown = await view.onView { view.shown.map { $0?.width } }
        #expect(shown.count > shownBefore && shown.last == 200)
        // the first load's placeholder (none) aside, never blank: the old image until the new one
        #expect(shown.first == .some(nil) && !shown.dropFirst().contains(where: { $0 == nil }), "\(shown)")
    }

    @Test("A failure image replaces the placeholder on failure, not on cancel; without one the placeholder stays")
    func failureImage() async throws {
        let s = try #require(servers)
        let missing = s.url(s.http, "/img/no-such-image.jpg")
        let (m, _) = makeManager()
        let placeholder = try #require(SDImage(data: try TestServers.jpeg(width: 5, height: 5, progressive: false)))
        let failure = try #require(SDImage(data: try TestServers.jpeg(width: 7, height: 7, progressive: false)))
        // SDWebImage's default: the placeholder stays
        let a = SizedTestView()
        let logA = CompletionLog()
        await a.onView { a.sd_setImage(with: missing, placeholderImage: placeholder, context: [.customManager: m], completed: logA.block) }
        await logA.wait(count: 1)
        #expect(logA.last?.1 != nil)
        #expect(await a.onView { a.shown.map { $0?.width } } == [5])
        // with a failure image: placeholder, then the failure image
        let b = SizedTestView()
        let logB = CompletionLog()
        await b.onView {
            b.sd_setImage(with: missing, placeholderImage: placeholder, context: [.customManager: m, .failureImage: failure],
                          completed: logB.block)
        }
        await logB.wait(count: 1)
        #expect(await b.onView { b.shown.map { $0?.width } } == [5, 7])
        // with .delayPlaceholder too: only the failure image
        let c = SizedTestView()
        let logC = CompletionLog()
        await c.onView {
            c.sd_setImage(with: missing, placeholderImage: placeholder, options: [.delayPlaceholder],
                          context: [.customManager: m, .failureImage: failure], completed: logC.block)
        }
        await logC.wait(count: 1)
        #expect(await c.onView { c.shown.map { $0?.width } } == [7])
        // a nil URL is a failure too
        let d = SizedTestView()
        let logD = CompletionLog()
        await d.onView { d.sd_setImage(with: nil, placeholderImage: placeholder, context: [.failureImage: failure], completed: logD.block) }
        await logD.wait(count: 1)
        #expect(await d.onView { d.shown.map { $0?.width } } == [5, 7])
        // cancelled: not a failure; the placeholder stays
        let gate = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(gate)") }
        let held = s.url(s.fault, "/drip-file?name=img/n1.jpg&piece=64&gap=20&gate=\(gate)")
        let e = SizedTestView()
        let logE = CompletionLog()
        await e.onView {
            e.sd_setImage(with: held, placeholderImage: placeholder, context: [.customManager: m, .failureImage: failure],
                          completed: logE.block)
            e.sd_cancelCurrentImageLoad()
        }
        await logE.wait(count: 1)
        #expect((logE.last?.1 as? SDWebImageError)?.code == .cancelled)
        #expect(await e.onView { e.shown.map { $0?.width } } == [5])
    }

    static func pixels(_ image: SDImage?) -> [UInt8]? { image?.bitmap.withUnsafeBytes { Array($0) } }

    @Test("A progress indicator: started when the load starts, filled as bytes arrive, gone when it ends")
    func progressIndicator() async throws {
        let s = try #require(servers)
        let url = s.url(s.fault, "/drip-file?name=img/n5.jpg&piece=64&gap=20")
        let (m, _) = makeManager()
        let view = SizedTestView()
        let bar = SDWebImageProgressIndicator(size: 50, height: 3)
        let log = CompletionLog()
        await view.onView {
            view.sd_imageIndicator = bar
            view.sd_setImage(with: url, context: [.customManager: m], completed: log.block)
        }
        await log.wait(count: 1)
        let overlays = await view.onView { view.overlays }
        #expect(overlays.first??.width == 50 && overlays.first??.height == 3)
        #expect(!overlays.isEmpty && overlays.last.flatMap { $0 } == nil, "stopped: the overlay is gone")
        // the filled part grew: count opaque pixels in the first row of each overlay
        let filled = overlays.compactMap { $0 }.map { img -> Int in
            let px = Self.pixels(img)!
            return (0..<50).filter { px[$0 * 4 + 3] == 255 }.count
        }
        #expect(filled.first == 0 && filled.contains { $0 > 0 } && filled == filled.sorted(), "\(filled)")
        #expect(!bar.isAnimating && bar.progress > 0)
        // a memory hit: started and stopped in the same call; a nil URL starts nothing
        let counts = await view.onView { () -> (Int, Int) in
            let before = view.overlays.count
            view.sd_setImage(with: url, context: [.customManager: m])
            let hit = view.overlays.count - before
            view.sd_setImage(with: nil)
            return (hit, view.overlays.count - before - hit)
        }
        #expect(counts.0 == 2 && counts.1 == 0)
    }

    @Test("An activity indicator turns on its clock while the load runs and stops with it")
    func activityIndicator() async throws {
        let s = try #require(servers)
        let gate = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(gate)") }
        let url = s.url(s.fault, "/drip-file?name=img/n6.jpg&piece=64&gap=5&gate=\(gate)")
        let (m, _) = makeManager()
        let view = SizedTestView()
        let clock = SDAnimatedImageManualClock()
        let spinner = SDWebImageActivityIndicator(size: 24, clock: clock)
        let log = CompletionLog()
        await view.onView {
            view.sd_imageIndicator = spinner
            view.sd_setImage(with: url, context: [.customManager: m], completed: log.block)
        }
        #expect(spinner.isAnimating && clock.isRunning && spinner.frameIndex == 0)
        clock.advance(by: 1.0 / 12)
        clock.advance(by: 1.0 / 12)
        #expect(spinner.frameIndex == 2)
        let frames = await view.onView { view.overlays.compactMap { Self.pixels($0) } }
        #expect(frames.count == 3 && frames[0] != frames[1] && frames[1] != frames[2], "the arc turns")
        #expect(frames[0].enumerated().contains { $0.offset % 4 == 3 && $0.element == 255 }, "something drawn")
        _ = s.faultGet("/open?gate=\(gate)")
        await log.wait(count: 1)
        #expect(log.last?.0 != nil)
        #expect(!spinner.isAnimating && !clock.isRunning)
        let last = await view.onView { (view.overlays.count, view.overlays.last.flatMap { $0 } == nil) }
        #expect(last.0 > 3 && last.1)
        // replaced: the old indicator is stopped and draws no more
        await view.onView { view.sd_imageIndicator = SDWebImageProgressIndicator() }
        clock.advance(by: 1)
        #expect(spinner.frameIndex == 2)
    }

    @Test("sd_imageLoadState: running, then finished with no error, a failure's error, or cancelled; per operation key")
    func loadStateTransitions() async throws {
        let s = try #require(servers)
        let gate = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(gate)") }
        let held = s.url(s.fault, "/drip-file?name=img/n7.jpg&piece=64&gap=5&gate=\(gate)")
        let (m, _) = makeManager()
        let view = SizedTestView()
        #expect(view.sd_imageLoadState == nil)
        let log = CompletionLog()
        let running = await view.onView { () -> SDWebImageLoadState? in
            view.sd_setImage(with: held, context: [.customManager: m], completed: log.block)
            return view.sd_imageLoadState
        }
        #expect(running?.url == held && running?.isFinished == false && running?.error == nil)
        _ = s.faultGet("/open?gate=\(gate)")
        await log.wait(count: 1)
        let done = await view.onView { view.sd_imageLoadState }
        #expect(done?.isFinished == true && done?.error == nil && done?.progress.fractionCompleted == 1)
        // a failure
        let missing = s.url(s.http, "/img/no-such-\(UUID().uuidString).jpg")
        await view.onView { view.sd_setImage(with: missing, context: [.customManager: m], completed: log.block) }
        await log.wait(count: 2)
        let failed = await view.onView { view.sd_imageLoadState }
        #expect(failed?.url == missing && failed?.isFinished == true && failed?.error != nil && failed?.error?.code != .cancelled)
        // cancelled, under its own key; the default key's state stays
        let gate2 = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(gate2)") }
        let held2 = s.url(s.fault, "/drip-file?name=img/n8.jpg&piece=64&gap=5&gate=\(gate2)")
        let states = await view.onView { () -> (SDWebImageLoadState?, SDWebImageLoadState?) in
            view.sd_setImage(with: held2, context: [.customManager: m, .setImageOperationKey: "background"], completed: log.block)
            view.sd_cancelImageLoadOperation(withKey: "background")
            return (view.sd_imageLoadState(forKey: "background"), view.sd_imageLoadState(forKey: "SizedTestView"))
        }
        await log.wait(count: 3)
        #expect(states.0?.isFinished == true && states.0?.error?.code == .cancelled)
        #expect(states.1?.url == missing)
    }
}

