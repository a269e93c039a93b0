import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Collects a prefetch's callbacks.
final class PrefetchLog: SDWebImagePrefetcherDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private(set) var progress: [(Int, Int)] = []
    private(set) var result: (finished: Int, skipped: Int)?
    private(set) var delegateFinished: [(Int, Int)] = []
    private var waiter: CheckedContinuation<Void, Never>?

    var progressBlock: @Sendable (Int, Int) -> Void { { f, t in self.lock.lock(); self.progress.append((f, t)); self.lock.unlock() } }
    var completedBlock: @Sendable (Int, Int) -> Void {
        { f, s in
            self.lock.lock()
            self.result = (f, s)
            let w = self.waiter
            self.waiter = nil
            self.lock.unlock()
            w?.resume()
        }
    }

    func imagePrefetcher(_ prefetcher: SDWebImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int) {
        lock.lock(); delegateFinished.append((totalCount, skippedCount)); lock.unlock()
    }

    func wait() async {
        await withCheckedContinuation { c in
            lock.lock()
            if result != nil { lock.unlock(); c.resume(); return }
            waiter = c
            lock.unlock()
        }
    }
}

@Suite("SDWebImagePrefetcher (ports of SDWebImagePrefetcherTests)", .serialized)
struct PrefetcherTests {
    let servers = TestServers.shared

    func prefetcher() -> (SDWebImagePrefetcher, SDImageCache) {
        let (m, c) = makeManager()
        return (SDWebImagePrefetcher(imageManager: m), c)
    }

    @Test("Several URLs: progress per URL, completion (count, 0); the images end up cached")
    func several() async throws {
        let s = try #require(servers, "test servers could not start")
        let (p, c) = prefetcher()
        #expect(p !== SDWebImagePrefetcher.shared && p.maxConcurrentPrefetchCount == 3)
        let urls = (0..<8).map { s.url(s.http, "/img/n\($0).jpg?pf") }
        let log = PrefetchLog()
        p.delegate = log
        p.prefetchURLs(urls, progress: log.progressBlock, completed: log.completedBlock)
        await log.wait()
        #expect(log.result?.finished == 8 && log.result?.skipped == 0)
        #expect(log.progress.count == 8 && log.progress.allSatisfy { $0.0 <= $0.1 && $0.1 == 8 })
        #expect(log.delegateFinished.count == 1 && log.delegateFinished.first?.0 == 8)
        c.waitForPendingWrites()
        #expect(urls.allSatisfy { c.imageFromMemoryCache(forKey: $0.absoluteString) != nil })
    }

    @Test("An empty list completes with (0, 0); failures count as skipped")
    func emptyAndFailures() async throws {
        let s = try #require(servers)
        let (p, _) = prefetcher()
        let empty = PrefetchLog()
        p.prefetchURLs([], completed: empty.completedBlock)
        await empty.wait()
        #expect(empty.result?.finished == 0 && empty.result?.skipped == 0)
        let mixed = PrefetchLog()
        p.prefetchURLs([s.url(s.http, "/img/n1.jpg?pf2"), s.url(s.http, "/img/none.jpg")], completed: mixed.completedBlock)
        await mixed.wait()
        #expect(mixed.result?.finished == 2 && mixed.result?.skipped == 1)
    }

    @Test("Two prefetches from different threads each complete with their own counts")
    func twoThreads() async throws {
        let s = try #require(servers)
        let (p, _) = prefetcher()
        let a = PrefetchLog(), b = PrefetchLog()
        let urlsA = (0..<5).map { s.url(s.http, "/img/n\($0).jpg?pfa") }
        let urlsB = (0..<3).map { s.url(s.http, "/img/n\($0).jpg?pfb") }
        DispatchQueue.global().async { p.prefetchURLs(urlsA, completed: a.completedBlock) }
        DispatchQueue.global().async { p.prefetchURLs(urlsB, completed: b.completedBlock) }
        await a.wait()
        await b.wait()
        #expect(a.result?.finished == 5 && b.result?.finished == 3)
    }

    @Test("Cancelling a token, or all downloads, still completes once with everything skipped")
    func cancelling() async throws {
        let s = try #require(servers)
        let (p, _) = prefetcher()
        let log = PrefetchLog()
        let token = p.prefetchURLs((0..<6).map { s.url(s.fault, "/stall?pfc\($0)") }, completed: log.completedBlock)
        try await Task.sleep(nanoseconds: 50_000_000)
        token.cancel()
        await log.wait()
        #expect(log.result?.finished == 6 && log.result?.skipped == 6 && token.isCancelled)

        let downloader = patientDownloader()
        let m = SDWebImageManager(cache: makeCache(), loader: downloader)
        let p2 = SDWebImagePrefetcher(imageManager: m)
        let log2 = PrefetchLog()
        p2.prefetchURLs((0..<3).map { s.url(s.fault, "/stall?pfd\($0)") }, completed: log2.completedBlock)
        try await Task.sleep(nanoseconds: 50_000_000)
        downloader.cancelAllDownloads()
        await log2.wait()
        #expect(log2.result?.skipped == 3)
    }

    @Test("Async prefetch returns (finished, skipped) once all are done (issue 19)")
    func asyncPrefetch() async throws {
        let s = try #require(TestServers.shared)
        let (m, _) = makeManager()
        let p = SDWebImagePrefetcher(imageManager: m)
        let r = await p.prefetchURLs([s.url(s.http, "/img/n1.jpg?apf"), s.url(s.http, "/img/none.jpg?apf")])
        #expect(r.finished == 2 && r.skipped == 1)
    }
}
