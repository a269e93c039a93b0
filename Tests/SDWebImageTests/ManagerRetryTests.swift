import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Retry with backoff against the fault server's /flaky (fails the first N
/// requests per id, counts every request).
@Suite("SDWebImageManager: retry policy")
struct ManagerRetryTests {
    let servers = TestServers.shared

    /// A fresh id per run: the fault server counts per id for its lifetime.
    func id(_ name: String) -> String { "\(name)-\(UInt32.random(in: 0...UInt32.max))" }

    func manager(_ policy: SDWebImageRetryPolicy?) -> SDWebImageManager {
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        m.retryPolicy = policy
        return m
    }

    static let quick = SDWebImageRetryPolicy(maxRetryCount: 3, initialDelay: 0.02, jitter: 0)

    @Test("Transient failures (503) are retried until the image comes; the URL is not blocklisted")
    func retriedUntilSuccess() async throws {
        let s = try #require(servers)
        let m = manager(Self.quick)
        let k = id("ok")
        let url = s.url(s.fault, "/flaky?id=\(k)&fail=2")
        let log = await m.load(url)
        #expect(log.last?.image?.width == 64 && log.last?.error == nil)
        #expect(s.flakyHits(k) == 3 && log.finals.count == 1)
        #expect(!m.isFailedURL(url))
    }

    @Test("Out of retries: the last error, after maxRetryCount + 1 attempts")
    func outOfRetries() async throws {
        let s = try #require(servers)
        let m = manager(SDWebImageRetryPolicy(maxRetryCount: 1, initialDelay: 0.02, jitter: 0))
        let k = id("out")
        let log = await m.load(s.url(s.fault, "/flaky?id=\(k)&fail=5"), .retryFailed)
        #expect(log.sdError?.code == .invalidDownloadStatusCode && log.sdError?.statusCode == 503)
        #expect(s.flakyHits(k) == 2 && log.finals.count == 1)
    }

    @Test("Not retried: a 404, any failure without a policy, and a load whose context says .none")
    func notRetried() async throws {
        let s = try #require(servers)
        let k404 = id("404")
        let notFound = await manager(Self.quick).load(s.url(s.fault, "/flaky?id=\(k404)&fail=5&status=404"), .retryFailed)
        #expect(notFound.sdError?.statusCode == 404 && s.flakyHits(k404) == 1)

        let kNone = id("nopolicy")
        let plain = await manager(nil).load(s.url(s.fault, "/flaky?id=\(kNone)&fail=1"), .retryFailed)
        #expect(plain.sdError?.statusCode == 503 && s.flakyHits(kNone) == 1)

        let kCtx = id("ctx")
        let overridden = await manager(Self.quick).load(s.url(s.fault, "/flaky?id=\(kCtx)&fail=1"), .retryFailed,
                                                        [.retryPolicy: SDWebImageRetryPolicy.none])
        #expect(overridden.sdError?.statusCode == 503 && s.flakyHits(kCtx) == 1)
    }

    @Test("A connection reset mid-body is retried")
    func resetRetried() async throws {
        let s = try #require(servers)
        let k = id("reset")
        let log = await manager(Self.quick).load(s.url(s.fault, "/flaky?id=\(k)&fail=1&kind=reset"))
        #expect(log.last?.image?.width == 64 && s.flakyHits(k) == 2)
    }

    @Test("Retry-After: honoured when within maxDelay; longer than maxDelay fails at once")
    func retryAfter() async throws {
        let s = try #require(servers)
        let kLong = id("after-long")
        let short = SDWebImageRetryPolicy(maxRetryCount: 3, initialDelay: 0.02, maxDelay: 0.5, jitter: 0)
        let refused = await manager(short).load(s.url(s.fault, "/flaky?id=\(kLong)&fail=1&after=1"), .retryFailed)
        #expect(refused.sdError?.statusCode == 503 && s.flakyHits(kLong) == 1)

        let kOk = id("after-ok")
        let start = Date()
        let waited = await manager(Self.quick).load(s.url(s.fault, "/flaky?id=\(kOk)&fail=1&after=1"))
        #expect(waited.last?.image != nil && s.flakyHits(kOk) == 2)
        #expect(Date().timeIntervalSince(start) >= 0.95)  // the server's 1 s, not our 20 ms
    }

    @Test("Cancelling during the pause ends the load at once with cancelled; no further attempt")
    func cancelDuringPause() async throws {
        let s = try #require(servers)
        // a pause far longer than any stall of a loaded test machine
        let m = manager(SDWebImageRetryPolicy(maxRetryCount: 3, initialDelay: 600, maxDelay: 600, jitter: 0))
        let k = id("cancel")
        let log = LoadLog()
        let op = try #require(m.loadImage(with: s.url(s.fault, "/flaky?id=\(k)&fail=5"), completed: log.block))
        // the first attempt failed and the load is pausing (no download token held)
        #expect(await eventually(60) { s.flakyHits(k) == 1 && op.loaderOperation.map { !($0 is SDWebImageDownloadToken) } ?? false })
        let start = Date()
        op.cancel()
        await log.wait()
        #expect(log.sdError?.code == .cancelled && log.finals.count == 1)
        #expect(Date().timeIntervalSince(start) < 120)  // not the 600 s pause
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(s.flakyHits(k) == 1 && log.finals.count == 1 && !m.isRunning)
    }

    @Test("Backoff: initial delay times the multiplier, capped; which errors are transient")
    func policy() {
        let p = SDWebImageRetryPolicy(maxRetryCount: 5, initialDelay: 0.5, multiplier: 2, maxDelay: 3)
        #expect((1...5).map { p.delay(forRetry: $0) } == [0.5, 1, 2, 3, 3])
        #expect(SDWebImageRetryPolicy.isTransient(URLError(.timedOut)))
        #expect(SDWebImageRetryPolicy.isTransient(URLError(.networkConnectionLost)))
        #expect(!SDWebImageRetryPolicy.isTransient(URLError(.secureConnectionFailed)))
        #expect(SDWebImageRetryPolicy.isTransient(SDWebImageError(.invalidDownloadStatusCode, statusCode: 503)))
        #expect(SDWebImageRetryPolicy.isTransient(SDWebImageError(.invalidDownloadStatusCode, statusCode: 429)))
        #expect(!SDWebImageRetryPolicy.isTransient(SDWebImageError(.invalidDownloadStatusCode, statusCode: 404)))
        #expect(!SDWebImageRetryPolicy.isTransient(SDWebImageError(.badImageData)))
        #expect(!SDWebImageRetryPolicy.isTransient(SDWebImageError(.cancelled)))
    }
}
