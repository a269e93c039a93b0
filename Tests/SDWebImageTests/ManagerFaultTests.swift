import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Every fault of the fault server through the whole manager (issue 7): the
/// right error, nothing cached as if complete, no leaked transfer, one callback.
@Suite("Faults through SDWebImageManager", .serialized)
struct ManagerFaultTests {
    let servers = TestServers.shared

    @Test("Each fault ends with its error, once; nothing is cached; no transfer is left")
    func faults() async throws {
        let s = try #require(servers, "test servers could not start")
        let cache = makeCache()
        let config = SDWebImageDownloaderConfig()
        config.downloadTimeout = 1
        config.maxConcurrentDownloads = 16  // all at once: a queued one would eat into its 1 s
        let downloader = SDWebImageDownloader(config: config)  // patience: the two faults that must time out
        let m = SDWebImageManager(cache: cache, loader: downloader)
        // Only the two that must time out get the short timeout's downloader.
        let patient = patientDownloader()
        let cases: [(String, (any Error) -> Bool)] = [
            ("/stall", { ($0 as? URLError)?.code == .timedOut }),
            ("/reset", { ($0 as? URLError)?.code == .networkConnectionLost }),
            ("/short", { ($0 as? URLError)?.code == .networkConnectionLost }),
            ("/endless", { ($0 as? SDWebImageError)?.code == .badImageData }),
            ("/redirect-loop", { ($0 as? URLError)?.code == .httpTooManyRedirects }),
            ("/500", { ($0 as? SDWebImageError)?.statusCode == 500 }),
            ("/html", { ($0 as? SDWebImageError)?.code == .badImageData }),
            ("/empty", { ($0 as? SDWebImageError)?.code == .badImageData }),
            ("/slow-headers", { ($0 as? URLError)?.code == .timedOut }),
        ]
        let logs = cases.map { c -> (String, LoadLog) in
            let log = LoadLog()
            let waits = c.0 == "/stall" || c.0 == "/slow-headers"
            m.loadImage(with: s.url(s.fault, c.0 + "?mf"), options: [.retryFailed, .waitStoreCache],
                        context: waits ? nil : [.imageLoader: patient], completed: log.block)
            return (c.0, log)
        }
        for ((path, log), (_, matches)) in zip(logs, cases) {
            await log.wait()
            let error = try #require(log.last?.error, "\(path) succeeded")
            #expect(matches(error), "\(path): \(error)")
            #expect(log.last?.image == nil && log.last?.data == nil, "\(path)")
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        for (path, log) in logs { #expect(log.finals.count == 1, "\(path)") }
        cache.waitForPendingWrites()
        #expect(cache.totalDiskCount() == 0)  // no partial image stored as if complete
        for (path, _) in cases { #expect(cache.imageFromMemoryCache(forKey: s.url(s.fault, path + "?mf").absoluteString) == nil) }
        #expect(await eventually { downloader.currentDownloadCount == 0 && patient.currentDownloadCount == 0 && !m.isRunning })
    }
}
