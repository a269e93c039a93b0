import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport

/// Everything one download reported, checked after it finished.
final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var _image: SDImage?
    private var _data: Data?
    private var _error: (any Error)?
    private var _finished = 0
    private var _previews: [SDImage] = []
    private var _progress: [(Int, Int)] = []
    private var _offQueue = 0
    private var continuation: CheckedContinuation<Void, Never>?
    let queue: DispatchQueue
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    init(queue: DispatchQueue = DispatchQueue(label: "test.callbacks")) {
        self.queue = queue
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(queue))
    }

    private func onQueue() -> Bool { DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(queue) }

    var progress: SDWebImageDownloaderProgressBlock {
        { r, e, _ in
            let ok = self.onQueue()
            self.lock.lock()
            self._progress.append((r, e))
            if !ok { self._offQueue += 1 }
            self.lock.unlock()
        }
    }

    var completed: SDWebImageDownloaderCompletedBlock {
        { image, data, error, finished in
            let ok = self.onQueue()
            self.lock.lock()
            if !ok { self._offQueue += 1 }
            if !finished {
                if let image { self._previews.append(image) }
                self.lock.unlock()
                return
            }
            self._finished += 1
            self._image = image
            self._data = data
            self._error = error
            let c = self.continuation
            self.continuation = nil
            self.lock.unlock()
            c?.resume()
        }
    }

    /// Returns once the final callback came (or at once if it already did).
    func wait() async {
        await withCheckedContinuation { c in
            lock.lock()
            if _finished > 0 { lock.unlock(); c.resume(); return }
            continuation = c
            lock.unlock()
        }
    }

    private func read<T>(_ f: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return f() }
    var image: SDImage? { read { _image } }
    var data: Data? { read { _data } }
    var error: (any Error)? { read { _error } }
    var finished: Int { read { _finished } }
    var previews: [SDImage] { read { _previews } }
    var progressCalls: [(Int, Int)] { read { _progress } }
    var offQueue: Int { read { _offQueue } }
    var sdError: SDWebImageError? { error as? SDWebImageError }
}

extension SDWebImageDownloader {
    /// The final callback of a plain download. The value passes through a
    /// lock (`awaitCallback`), so ThreadSanitizer sees the image handed from
    /// the decoding thread to the awaiting task (issue 19's TSan flake).
    func finalResult(_ url: URL) async -> (image: SDImage?, data: Data?, error: (any Error)?) {
        await awaitCallback { done in
            downloadImage(with: url) { image, data, error, finished in
                if finished { done((image, data, error)) }
            }
        }
    }

    /// Start a download that reports into a new Outcome.
    @discardableResult
    func start(_ url: URL?, _ options: SDWebImageDownloaderOptions = [], _ context: SDWebImageContext? = nil,
               queue: DispatchQueue? = nil) -> (Outcome, SDWebImageDownloadToken?) {
        let o = queue.map { Outcome(queue: $0) } ?? Outcome()
        var ctx = context ?? [:]
        ctx[.callbackQueue] = o.queue
        let token = downloadImage(with: url, options: options, context: ctx, progress: o.progress, completed: o.completed)
        return (o, token)
    }

    func load(_ url: URL?, _ options: SDWebImageDownloaderOptions = [], _ context: SDWebImageContext? = nil) async -> Outcome {
        let (o, _) = start(url, options, context)
        await o.wait()
        return o
    }
}

/// Counts notifications about operations whose request is for `url`.
final class NotificationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [Notification.Name] = []
    private var observers: [NSObjectProtocol] = []

    init(url: URL) {
        for name in [Notification.Name.SDWebImageDownloadStart, .SDWebImageDownloadReceiveResponse,
                     .SDWebImageDownloadStop, .SDWebImageDownloadFinish] {
            observers.append(NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { n in
                guard let op = n.object as? any SDWebImageDownloaderOperationProtocol, op.request?.url == url else { return }
                self.lock.lock()
                self.names.append(n.name)
                self.lock.unlock()
            })
        }
    }

    deinit { for o in observers { NotificationCenter.default.removeObserver(o) } }

    func count(_ name: Notification.Name) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return names.filter { $0 == name }.count
    }

    var all: [Notification.Name] { lock.lock(); defer { lock.unlock() }; return names }
}

/// Polls (without blocking a thread) until `condition` holds or time runs out:
/// a minute by default, which only a failing test waits out (nothing asks
/// for a condition not to come).
func eventually(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
    await eventuallyAsync(seconds) { condition() }
}

/// `eventually` for a condition that must be awaited (a view's state, read on its queue).
func eventuallyAsync(_ seconds: Double = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
    return await condition()
}

/// `/drip-progressive` with its last piece held until `open()`: a test that
/// needs a preview waits for one, then opens, so the preview comes from the
/// bytes that are in rather than from how fast a starved machine decodes
/// (a drip that ends before the first decode gives none). `open()` is safe to
/// repeat; call it in a `defer` too, so a failing test never leaves a drip held.
struct HeldDrip {
    let url: URL
    private let servers: TestServers
    private let gate = UUID().uuidString

    init(_ s: TestServers, tag: String = "") {
        servers = s
        url = s.url(s.fault, "/drip-progressive?\(tag)&gate=\(gate)")
    }

    func open() { _ = servers.faultGet("/open?gate=\(gate)") }
}

/// Run blocking work (waitpid, reading a child's pipe) off Swift's cooperative
/// pool: on 2 cores that pool has 2 threads, and a test blocking one of them
/// stalls every async test running beside it (seen as 15-25 s stalls under TSan).
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in
        Thread { c.resume(returning: body()) }.start()
    }
}
