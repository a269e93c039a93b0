import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Objects go away when their users let go: no cycles keep a downloader (and
/// with it a loop thread and its sockets) alive.
@Suite("Lifetimes", .serialized)
struct LifetimeTests {
    let servers = TestServers.shared

    @Test("Manager, downloader, cache and their operations are freed after use")
    func freed() async throws {
        let s = try #require(servers, "test servers could not start")
        weak var weakDownloader: SDWebImageDownloader?
        weak var weakManager: SDWebImageManager?
        weak var weakCache: SDImageCache?
        do {
            let cache = makeCache()
            let downloader = patientDownloader()
            let manager = SDWebImageManager(cache: cache, loader: downloader)
            (weakDownloader, weakManager, weakCache) = (downloader, manager, cache)
            _ = await manager.load(s.url(s.http, "/img/n1.jpg?life"))
            _ = await manager.load(s.url(s.http, "/img/n1.jpg?life"))  // a memory hit
            let cancelled = LoadLog()
            manager.loadImage(with: s.url(s.fault, "/stall?life"), completed: cancelled.block)?.cancel()
            await cancelled.wait()
            cache.waitForPendingWrites()
        }
        #expect(await eventually { weakManager == nil && weakDownloader == nil && weakCache == nil },
                "manager \(weakManager == nil), downloader \(weakDownloader == nil), cache \(weakCache == nil)")
    }
}
