import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Downloads that break part-way resume from where they stopped (Range +
/// If-Range against the fault server's /resumable, which counts the ranges).
@Suite("SDWebImageDownloader: resuming broken-off downloads")
struct DownloaderResumeTests {
    let servers = TestServers.shared

    func id(_ name: String) -> String { "\(name)-\(UInt32.random(in: 0...UInt32.max))" }

    func download(_ d: SDWebImageDownloader, _ url: URL) async -> (SDImage?, Data?, (any Error)?) {
        let r = await d.finalResult(url)  // through a lock: TSan sees the hand-off
        return (r.image, r.data, r.error)
    }

    @Test("The next request for a URL asks only for the rest; with no capacity it starts over")
    func nextRequestResumes() async throws {
        let s = try #require(servers)
        let whole = try Data(contentsOf: s.www.appendingPathComponent("img/small.jpg"))
        for capacity in [32 << 20, 0] {
            let config = SDWebImageDownloaderConfig()
            config.resumableDataCapacity = capacity
            let d = patientDownloader(config)
            let k = id("dl\(capacity)")
            let url = s.url(s.fault, "/resumable?id=\(k)")
            let first = await download(d, url)
            #expect((first.2 as? URLError)?.code == .networkConnectionLost && first.0 == nil)
            let second = await download(d, url)
            #expect(second.2 == nil && second.0?.width == 64 && second.1 == whole)
            #expect(s.resumedRanges(k) == (capacity > 0 ? [whole.count / 2] : []))
        }
    }

    @Test("A manager retry after a reset fetches only the missing half and caches the whole image")
    func retryResumes() async throws {
        let s = try #require(servers)
        let whole = try Data(contentsOf: s.www.appendingPathComponent("img/small.jpg"))
        let cache = makeCache()
        let m = SDWebImageManager(cache: cache, loader: patientDownloader())
        m.retryPolicy = SDWebImageRetryPolicy(maxRetryCount: 2, initialDelay: 0.02, jitter: 0)
        let k = id("mgr")
        let url = s.url(s.fault, "/resumable?id=\(k)")
        let log = await m.load(url, .waitStoreCache)
        #expect(log.last?.image?.width == 64 && log.last?.error == nil)
        #expect(s.resumedRanges(k) == [whole.count / 2])
        #expect(cache.diskImageData(forKey: url.absoluteString) == whole)
    }
}
