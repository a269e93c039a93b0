import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

@Suite("SDWebImageDownloader: modifiers, decryptor, custom operations, notifications, HTTP cache")
struct DownloaderHooksTests {
    let servers = TestServers.shared

    @Test("Request modifiers: headers reach the server, the URL can be rewritten, nil fails the download")
    func requestModifier() async throws {
        let s = try #require(servers)
        let url = s.url(s.fault, "/require-token")
        let plain = await patientDownloader().load(url)
        #expect(plain.sdError?.statusCode == 403)

        let headers = SDWebImageDownloaderRequestModifier(headers: ["X-Token": "sdwebimage"])
        let viaContext = await patientDownloader().load(url, [], [.downloadRequestModifier: headers])
        #expect(viaContext.image != nil)
        let config = SDWebImageDownloaderConfig()
        config.requestModifier = headers
        #expect(await patientDownloader(config).load(url).image != nil)

        let rewrite = SDWebImageDownloaderRequestModifier { request in
            var r = request
            r.url = s.url(s.http, "/img/n3.jpg")
            return r
        }
        let rewritten = await patientDownloader().load(s.url(s.http, "/nothing-here.jpg"), [],
                                                          [.downloadRequestModifier: rewrite])
        #expect(rewritten.image?.width == 19)
        let refuse = SDWebImageDownloaderRequestModifier { _ in nil }
        let refused = await patientDownloader().load(url, [], [.downloadRequestModifier: refuse])
        #expect(refused.sdError?.code == .invalidDownloadOperation && refused.finished == 1)
    }

    @Test("Response modifiers: a changed status is checked and shown on the token; nil gives invalidDownloadResponse")
    func responseModifier() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.http, "/img/small.jpg")
        let to404 = SDWebImageDownloaderResponseModifier(statusCode: 404, headers: ["X-Modified": "yes"])
        let (o, token) = d.start(url, [], [.downloadResponseModifier: to404])
        await o.wait()
        #expect(o.sdError?.code == .invalidDownloadStatusCode && o.sdError?.statusCode == 404 && o.image == nil)
        let response = try #require(token?.response as? HTTPURLResponse)
        #expect(response.statusCode == 404 && response.value(forHTTPHeaderField: "X-Modified") == "yes")

        let nothing = SDWebImageDownloaderResponseModifier { _ in nil }
        let o2 = await d.load(url, [], [.downloadResponseModifier: nothing])
        #expect(o2.sdError?.code == .invalidDownloadResponse)
        let rescue = SDWebImageDownloaderResponseModifier(statusCode: 200)  // a 404 turned into a success...
        let o3 = await d.load(s.url(s.fault, "/require-token?rescued"), [], [.downloadResponseModifier: rescue])
        #expect(o3.sdError?.code == .badImageData)  // ...whose empty body is no image
    }

    @Test("Decryptors: base64 bodies decode; nil gives badImageData")
    func decryptor() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.fault, "/base64")
        let encoded = await d.load(url)
        #expect(encoded.sdError?.code == .badImageData)
        let decoded = await d.load(url, .progressiveLoad, [.downloadDecryptor: SDWebImageDownloaderDecryptor.base64])
        #expect(decoded.image?.width == 64 && decoded.previews.isEmpty)
        let config = SDWebImageDownloaderConfig()
        config.decryptor = SDWebImageDownloaderDecryptor { _, _ in nil }
        let failed = await patientDownloader(config).load(s.url(s.http, "/img/small.jpg"))
        #expect(failed.sdError?.code == .badImageData)
    }

    @Test("Notifications: start, response, stop, finish on success; no finish on failure")
    func notifications() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let ok = s.url(s.http, "/img/n5.jpg?notify")
        let log = NotificationLog(url: ok)
        _ = await d.load(ok)
        #expect(await eventually { log.count(.SDWebImageDownloadFinish) == 1 })
        #expect(log.all == [.SDWebImageDownloadStart, .SDWebImageDownloadReceiveResponse,
                            .SDWebImageDownloadStop, .SDWebImageDownloadFinish])
        let bad = s.url(s.http, "/img/none.jpg?notify")
        let failed = NotificationLog(url: bad)
        _ = await d.load(bad)
        #expect(await eventually { failed.count(.SDWebImageDownloadStop) == 1 })
        try await Task.sleep(nanoseconds: 30_000_000)
        #expect(failed.count(.SDWebImageDownloadFinish) == 0 && failed.count(.SDWebImageDownloadStart) == 1)
    }

    @Test("useHTTPCache revalidates with the ETag: 304 gives the bytes back, or cacheNotModified when told to")
    func httpCache() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.http, "/img/n6.jpg")
        let first = await d.load(url, .useHTTPCache)
        #expect(first.image != nil)
        let (second, token) = d.start(url, .useHTTPCache)
        await second.wait()
        #expect(second.image?.width == first.image?.width && second.data == first.data)
        #expect((token?.request?.url) == url)
        let ignored = await d.load(url, [.useHTTPCache, .ignoreCachedResponse])
        #expect(ignored.sdError?.code == .cacheNotModified && ignored.image == nil)
        let fresh = await d.load(url)  // no flag: no conditional request
        #expect(fresh.image != nil)
    }

    @Test("handleCookies: a cookie set by one response goes back with the next; never without the option")
    func cookies() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        #expect(await d.load(s.url(s.fault, "/set-cookie"), .handleCookies).image != nil)
        let with = await d.load(s.url(s.fault, "/need-cookie"), .handleCookies)
        #expect(with.image != nil)
        let without = await d.load(s.url(s.fault, "/need-cookie?plain"))
        #expect(without.sdError?.statusCode == 403)
        let other = await patientDownloader().load(s.url(s.fault, "/need-cookie?other"), .handleCookies)
        #expect(other.sdError?.statusCode == 403)  // cookies stay within one downloader
    }

    @Test("A custom operation type plugs in through the config; nil restores the default")
    func customOperation() async throws {
        let s = try #require(servers)
        let config = SDWebImageDownloaderConfig()
        config.operationClass = MemoryOperation.self
        let d = patientDownloader(config)
        let o = await d.load(URL(string: "memory://anything.png"))
        #expect(o.image?.width == 3 && o.image?.height == 2)
        d.config.operationClass = nil
        #expect(await d.load(s.url(s.http, "/img/small.jpg")).image?.width == 64)
    }

    @Test("Priority changes reach any operation class: the highest subscriber's, raised and lowered while queued")
    func priorityForAnyOperationClass() async throws {
        let config = SDWebImageDownloaderConfig()
        config.operationClass = ParkedOperation.self
        let d = patientDownloader(config)
        let url = URL(string: "memory://parked.png")!
        let (o1, t1) = d.start(url, .lowPriority)
        let (o2, t2) = d.start(url)
        let (o3, t3) = d.start(url, .highPriority)
        let op = try #require(ParkedOperation.last)
        #expect(op.priorities == [.normal, .high])          // joins raise it
        t3?.cancel()
        #expect(op.priorities == [.normal, .high, .normal])  // the high one left
        t2?.priority = .low
        #expect(op.priorities.last == .low)                  // lowered while queued
        t1?.priority = .high
        t2?.priority = .normal                               // below the highest: no change
        #expect(op.priorities == [.normal, .high, .normal, .low, .high])
        op.finish()
        for o in [o1, o2, o3] { await o.wait() }
        #expect(o1.image?.width == 3 && o2.image?.width == 3 && o3.sdError?.code == .cancelled)
        #expect(t1?.priority == .high)
    }

    @Test("An operation runs on its own, without the downloader's bookkeeping")
    func standaloneOperation() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        let env = SDWebImageDownloaderOperationEnvironment(
            loader: loader, minimumProgressInterval: 0, username: nil, password: nil,
            acceptableStatusCodes: IndexSet(integersIn: 200..<300), acceptableContentTypes: nil,
            responseModifier: nil, decryptor: nil, callbackQueue: DispatchQueue(label: "standalone"))
        let op = SDWebImageDownloaderOperation(request: URLRequest(url: s.url(s.http, "/img/small.jpg")),
                                               options: [], context: nil, environment: env)
        let o = Outcome()
        var coder = SDImageLoaderDecodeOptions()
        coder.callbackQueue = SDCallbackQueue(dispatchQueue: o.queue, policy: .dispatch)
        _ = op.addHandlers(forProgress: nil, completed: o.completed, decodeOptions: coder)
        #expect(!op.isExecuting && !op.isFinished)
        op.start()
        await o.wait()
        #expect(o.image?.width == 64 && op.isFinished && !op.isCancelled && op.metrics != nil)
        #expect(op.addHandlers(forProgress: nil, completed: nil, decodeOptions: coder) == nil)
    }
}

/// A custom operation: "downloads" a 3x2 PNG made in memory.
/// Waits until `finish()`, recording the priorities the downloader gives it.
class ParkedOperation: SDWebImageDownloaderOperationProtocol, @unchecked Sendable {
    nonisolated(unsafe) static var last: ParkedOperation?
    let request: URLRequest?
    private let lock = NSLock()
    private var handlers: [Int: (SDWebImageDownloaderCompletedBlock?, SDCallbackQueue)] = [:]
    private var _priorities: [DownloadPriority] = []
    private var done = false
    private let queue: DispatchQueue
    var completionBlock: (@Sendable () -> Void)?

    required init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                  environment: SDWebImageDownloaderOperationEnvironment) {
        self.request = request
        queue = environment.callbackQueue
        if type(of: self) == ParkedOperation.self { Self.last = self }  // not the subclass (tests run in parallel)
    }

    var priorities: [DownloadPriority] { lock.lock(); defer { lock.unlock() }; return _priorities }
    func setPriority(_ priority: DownloadPriority) { lock.lock(); _priorities.append(priority); lock.unlock() }

    func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                     completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                     decodeOptions: SDImageLoaderDecodeOptions) -> (any Sendable)? {
        lock.lock()
        defer { lock.unlock() }
        if done { return nil }
        let id = handlers.count
        handlers[id] = (completedBlock, decodeOptions.callbackQueue ?? SDCallbackQueue(dispatchQueue: queue))
        return id
    }

    func cancel(_ token: (any Sendable)?) -> Bool {
        lock.lock()
        let h = (token as? Int).flatMap { handlers.removeValue(forKey: $0) }
        lock.unlock()
        if let (c, q) = h { q.async { c?(nil, nil, SDWebImageError(.cancelled, "cancelled"), true) } }
        return false
    }

    func start() {}

    func finish() {
        let data = try? TestServers.png(width: 3, height: 2)
        let image = data.flatMap { SDImage(data: $0) }
        lock.lock()
        done = true
        let hs = handlers.values
        handlers = [:]
        lock.unlock()
        for (c, q) in hs { q.async { c?(image, data, nil, true) } }
        completionBlock?()
    }

    func cancel() {}
    var response: URLResponse? { nil }
    var metrics: DownloadMetrics? { nil }
    var isExecuting: Bool { false }
    var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return done }
    var isCancelled: Bool { false }
}

/// Answers at once, from memory, with a 3x2 PNG.
final class MemoryOperation: ParkedOperation, @unchecked Sendable {
    override func start() { finish() }
}
