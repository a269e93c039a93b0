import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

@Suite("SDWebImageDownloader: coalescing, cancellation, order")
struct DownloaderCoalescingTests {
    let servers = TestServers.shared

    @Test("Ten requests for one URL with thumbnail sizes 490...499: one transfer, each its own size")
    func thumbnailsFromOneTransfer() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.http, "/img/big.jpg?thumbs")
        let log = NotificationLog(url: url)
        d.isSuspended = true  // all ten join before the transfer can finish
        let outcomes = (490...499).map { size in
            d.start(url, [], [.imageThumbnailPixelSize: CGSize(width: size, height: size)]).0
        }
        #expect(d.currentDownloadCount == 1)
        d.isSuspended = false
        for o in outcomes { await o.wait() }
        for (o, size) in zip(outcomes, 490...499) {
            let image = try #require(o.image)
            #expect(image.width == size && image.height == Int((Double(size) * 0.75).rounded()), "\(size)")
            #expect(image.sourcePixelWidth == 1000 && o.finished == 1)
        }
        #expect(await eventually { log.count(.SDWebImageDownloadStop) == 1 })
        #expect(log.count(.SDWebImageDownloadStart) == 1)
    }

    @Test("Cancelling one subscriber leaves the others; cancelling the last stops the transfer")
    func cancelSubscribers() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.fault, "/drip?cancel-one")
        let (first, t1) = d.start(url)
        let (second, _) = d.start(url)
        #expect(d.currentDownloadCount == 1)
        t1?.cancel()
        t1?.cancel()  // twice: still one callback
        await first.wait()
        await second.wait()
        #expect(first.sdError?.code == .cancelled && first.finished == 1 && first.image == nil)
        #expect(second.image != nil && second.error == nil)

        let stall = s.url(s.fault, "/stall?cancel-last")
        let log = NotificationLog(url: stall)
        let (a, ta) = d.start(stall)
        let (b, tb) = d.start(stall)
        try await Task.sleep(nanoseconds: 50_000_000)
        ta?.cancel()
        tb?.cancel()
        await a.wait()
        await b.wait()
        #expect(a.sdError?.code == .cancelled && b.sdError?.code == .cancelled)
        #expect(d.currentDownloadCount == 0)
        #expect(await eventually { log.count(.SDWebImageDownloadStop) == 1 })  // the transfer ended, not at 60 s
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(a.finished == 1 && b.finished == 1)
    }

    @Test("A request after cancel or after finish starts a new transfer")
    func requestAgain() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.fault, "/drip?again")
        let (o1, t1) = d.start(url)
        t1?.cancel()
        let o2 = await d.load(url)
        await o1.wait()
        #expect(o1.sdError?.code == .cancelled && o2.image != nil)
        let log = NotificationLog(url: url)
        let o3 = await d.load(url)
        #expect(o3.image != nil)
        #expect(await eventually { log.count(.SDWebImageDownloadStart) == 1 })
    }

    @Test("cancel() on the token and cancelAllDownloads complete with cancelled, counts drop to 0")
    func cancelAll() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let (o, token) = d.start(s.url(s.fault, "/stall?one"))
        #expect(d.currentDownloadCount == 1)
        token?.cancel()
        await o.wait()
        #expect(o.sdError?.code == .cancelled)
        #expect(await eventually { d.currentDownloadCount == 0 })

        let many = (0..<5).map { d.start(s.url(s.fault, "/stall?all\($0)")).0 }
        #expect(d.currentDownloadCount == 5)
        d.cancelAllDownloads()
        #expect(d.currentDownloadCount == 0)
        for o in many {
            await o.wait()
            #expect(o.sdError?.code == .cancelled && o.finished == 1)
        }
    }

    @Test("LIFO and FIFO with one download at a time (14 URLs)")
    func executionOrder() async throws {
        let s = try #require(servers)
        for order in [SDWebImageDownloaderExecutionOrder.lifo, .fifo] {
            let config = SDWebImageDownloaderConfig()
            config.maxConcurrentDownloads = 1
            config.executionOrder = order
            let d = patientDownloader(config)
            // Transfers start in queue order; decodes may finish out of it, so
            // the order is read from the responses.
            let urls = (1...14).map { s.url(s.http, "/img/n\($0 % 8).jpg?\(order)\($0)") }
            let started = ResponseOrder(urls)
            d.isSuspended = true
            let outcomes = urls.map { d.start($0).0 }
            d.isSuspended = false
            for o in outcomes { await o.wait() }
            #expect(await eventually { started.values.count == 14 })
            #expect(started.values == (order == .lifo ? Array((1...14).reversed()) : Array(1...14)), "\(order)")
        }
    }

    @Test("High priority overtakes queued normal downloads")
    func priority() async throws {
        let s = try #require(servers)
        let config = SDWebImageDownloaderConfig()
        config.maxConcurrentDownloads = 1
        let d = patientDownloader(config)
        let urls = (1...3).map { s.url(s.http, "/img/n\($0).jpg?prio") }
        let started = ResponseOrder(urls)
        d.isSuspended = true
        let outcomes = zip(urls, [SDWebImageDownloaderOptions.lowPriority, [], .highPriority]).map { d.start($0, $1).0 }
        d.isSuspended = false
        for o in outcomes { await o.wait() }
        #expect(await eventually { started.values.count == 3 })
        #expect(started.values == [3, 2, 1])

        // lowered while queued: the high one steps back behind the normal one
        let later = (4...5).map { s.url(s.http, "/img/n\($0).jpg?prio") }
        let order = ResponseOrder(later)
        d.isSuspended = true
        let (o4, t4) = d.start(later[0], .highPriority)
        let (o5, _) = d.start(later[1])
        t4?.priority = .low
        d.isSuspended = false
        for o in [o4, o5] { await o.wait() }
        #expect(await eventually { order.values.count == 2 })
        #expect(order.values == [2, 1])
    }

    @Test("200 staggered requests for one URL never lose or double a callback")
    func staggered() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.fault, "/drip?staggered")
        var outcomes: [Outcome] = []
        for i in 0..<200 {
            outcomes.append(d.start(url).0)
            if i % 10 == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
        }
        for o in outcomes { await o.wait() }
        #expect(outcomes.allSatisfy { $0.image != nil && $0.error == nil })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(outcomes.allSatisfy { $0.finished == 1 })

        let empty = s.url(s.fault, "/empty?staggered")
        var failures: [Outcome] = []
        for _ in 0..<11 {
            failures.append(d.start(empty).0)
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        for o in failures { await o.wait() }
        #expect(failures.allSatisfy { $0.sdError?.code == .badImageData && $0.finished == 1 })
    }

    @Test("Stress from many threads: random URLs, joins and cancels; every callback exactly once")
    func stress() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let outcomes = OutcomeBag()
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let path = ["/img/n\(i % 8).jpg", "/drip?s\(i % 5)", "/stall?s\(i % 3)", "/empty?s\(i % 2)"][i % 4]
            let base = path.hasPrefix("/img") ? s.http : s.fault
            let (o, token) = d.start(s.url(base, path), i % 7 == 0 ? .highPriority : [])
            outcomes.add(o)
            if path.hasPrefix("/stall") || i % 5 == 0 { token?.cancel() }
        }
        let all = outcomes.values
        for o in all { await o.wait() }
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(all.count == 400 && all.allSatisfy { $0.finished == 1 && $0.offQueue == 0 })
        #expect(await eventually { d.currentDownloadCount == 0 })
    }
}

/// The order (1-based index into `urls`) in which responses arrived.
final class ResponseOrder: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [Int] = []
    private var observer: NSObjectProtocol?

    init(_ urls: [URL]) {
        observer = NotificationCenter.default.addObserver(forName: .SDWebImageDownloadReceiveResponse, object: nil,
                                                          queue: nil) { [weak self] n in
            guard let self, let op = n.object as? any SDWebImageDownloaderOperationProtocol,
                  let i = urls.firstIndex(where: { $0 == op.request?.url }) else { return }
            self.lock.lock()
            self._values.append(i + 1)
            self.lock.unlock()
        }
    }

    deinit { observer.map { NotificationCenter.default.removeObserver($0) } }

    var values: [Int] { lock.lock(); defer { lock.unlock() }; return _values }
}

final class OutcomeBag: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [Outcome] = []
    func add(_ o: Outcome) { lock.lock(); _values.append(o); lock.unlock() }
    var values: [Outcome] { lock.lock(); defer { lock.unlock() }; return _values }
}
