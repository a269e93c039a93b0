import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
@testable import SDWebImageRedis
import Testing

/// One "host": its own empty disk cache and downloader, the shared Redis as
/// L2, and (with `fleet`) the fleet loader in front of its downloader.
struct Host {
    let manager: SDWebImageManager
    let local: SDImageCache
    let redis: SDImageRedisCache
    let fleet: SDRedisFleetLoader?

    init(_ server: RedisTestServer, namespace: String, fleet: Bool = true,
         options: SDRedisFleetLoader.Options = patientFleet(), downloaderConfig: SDWebImageDownloaderConfig = .init(),
         cacheConfig: SDImageCacheConfig = .init()) throws {
        local = SDImageCache(namespace: "fleet", diskCacheDirectory: NSTemporaryDirectory() + unique("host"), config: cacheConfig)
        redis = try SDImageRedisCache(url: server.url, namespace: namespace, options: patient(), config: cacheConfig)
        let caches = redis.tiered(behind: local)
        let downloader = patientDownloader(downloaderConfig)
        self.fleet = fleet ? SDRedisFleetLoader(loader: downloader, cache: redis, options: options) : nil
        manager = SDWebImageManager(cache: caches, loader: self.fleet ?? downloader)
    }

    func load(_ url: URL, _ options: SDWebImageOptions = []) async -> (SDImage?, (any Error)?) {
        let (image, error, _) = await loadWithType(url, options)
        return (image, error)
    }

    func loadWithType(_ url: URL, _ options: SDWebImageOptions = [],
                      context: SDWebImageContext? = nil) async -> (SDImage?, (any Error)?, SDImageCacheType) {
        await awaitCallback { done in  // through a lock: TSan sees the image's hand-off
            manager.loadImage(with: url, options: options, context: context) { image, _, error, type, finished, _ in
                if finished { done((image, error, type)) }
            }
        }
    }
}

@Suite("SDRedisFleetLoader: one origin request per image across processes sharing a Redis")
struct FleetLoaderTests {
    func hits(_ servers: TestServers, _ id: String) -> Int { Int(servers.faultGet("/hits?id=\(id)") ?? "") ?? -1 }

    /// What stands in `url`'s lease key now (a token, a failure mark), or nil.
    func leaseValue(_ host: Host, _ url: URL) -> String? {
        guard case .string(let v)? = host.redis.store.client.command("GET", host.redis.store.leaseKey(forKey: url.absoluteString))
        else { return nil }
        return String(decoding: v, as: UTF8.self)
    }

    @Test("Three hosts load one slow image at once: one origin request, two read it from Redis with its validators")
    func oneOriginRequest() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        let id = unique("one")
        let url = try #require(URL(string: servers.fault + "/etag?id=\(id)&etag=v7&delay=400"))
        let hosts = try (0..<3).map { _ in try Host(server, namespace: ns) }
        async let a = hosts[0].loadWithType(url)
        async let b = hosts[1].loadWithType(url)
        async let c = hosts[2].loadWithType(url)
        let results = await [a, b, c]
        #expect(results.allSatisfy { $0.0 != nil && $0.1 == nil })
        #expect(hits(servers, id) == 1)
        let stats = hosts.compactMap { $0.fleet?.statistics }
        #expect(stats.map(\.fetched).reduce(0, +) == 1)
        // the others waited for the owner's bytes — or, on a machine that
        // stalled one of them past the owner's store, found them as a Redis hit
        let l2Hits = results.filter { $0.2 == .disk }.count
        #expect(stats.map(\.shared).reduce(0, +) + l2Hits == 2)
        // every host's own cache keeps the validators (the waiters' from
        // Redis), so each can revalidate later
        for h in hosts {
            h.local.waitForPendingWrites()
            let raw = try #require(h.local.extendedData(forKey: url.absoluteString))
            #expect(try JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw).etag == "\"v7\"")
        }
        let lease = hosts[0].redis.store.leaseKey(forKey: url.absoluteString)
        if case .integer(let n)? = hosts[0].redis.store.client.command("EXISTS", lease) {
            #expect(n == 0)  // released by its owner
        } else {
            Issue.record("EXISTS failed")
        }
    }

    @Test("A thumbnail's early-ended transfer is shared as what it is: another host's thumbnail from it, never a full size")
    func partialShared() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        let file = try Data(contentsOf: servers.www.appendingPathComponent("trickle/grey.jpg"))
        // the origin sends the first half and holds the rest until its gate
        // opens: the thumbnail's transfer can only complete by ending early
        let id = unique("shared")
        let url = servers.url(servers.fault, "/drip-file?name=trickle/grey.jpg&piece=4096&gap=0&mid=\(id)&id=\(id)")
        let thumb = { (px: Int) -> SDWebImageContext in [.imageThumbnailPixelSize: CGSize(width: px, height: px)] }
        let a = try Host(server, namespace: ns)
        let first = await a.loadWithType(url, context: thumb(112))
        _ = servers.faultGet("/open?gate=\(id)")
        #expect(first.0?.width == 112)
        a.local.waitForPendingWrites()
        // another host's thumbnail as small: from the shared first bytes (Redis), no request
        let c = try Host(server, namespace: ns)
        let again = await c.loadWithType(url, context: thumb(100))
        #expect(again.0?.width == 100 && again.2 == .disk)
        #expect(hits(servers, id) == 1)
        // a third host's full size: never the prefix; the whole file from the origin
        let sent = servers.faultSent(id)
        let b = try Host(server, namespace: ns)
        let full = await b.loadWithType(url)
        #expect(full.0?.width == 1800 && full.0?.height == 1200 && full.1 == nil)
        #expect(hits(servers, id) == 2 && servers.faultSent(id) == sent + file.count)
    }

    @Test("decodeLimits bind what another process wrote: a Redis value over them is neither an L2 hit nor served by the fleet loader")
    func decodeLimits() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        let id = unique("caps")
        let url = try #require(URL(string: servers.fault + "/etag?id=\(id)"))  // the origin's image: 64x48
        let planted = try fixture(200, 150)  // 30,000 pixels, written by some other process
        let tight = SDWebImageDownloaderConfig()
        tight.decodeLimits.maxPixels = 5000
        let tightCache = SDImageCacheConfig()
        tightCache.decodeLimits = tight.decodeLimits
        let capped = try Host(server, namespace: ns, downloaderConfig: tight, cacheConfig: tightCache)
        try capped.redis.store.setData(planted, forKey: url.absoluteString, extendedData: nil)
        // the L2 query refuses it (a miss), the fleet loader finds it and refuses it too: the origin's
        let (image, error, type) = await capped.loadWithType(url)
        #expect(image?.width == 64 && error == nil && type == .none)
        #expect(hits(servers, id) == 1 && capped.fleet?.statistics.shared == 0)
        // under the default caps the same value is an L2 hit (planted again once the load's stores are done)
        capped.local.waitForPendingWrites()
        capped.redis.cache.waitForPendingWrites()
        try capped.redis.store.setData(planted, forKey: url.absoluteString, extendedData: nil)
        let open = try Host(server, namespace: ns)
        let (openImage, _, openType) = await open.loadWithType(url)
        #expect(openImage?.width == 200 && openType == .disk && hits(servers, id) == 1)
    }

    @Test("Bytes the fleet loader just wrote or read are not written again when the manager stores them in every tier")
    func noWriteBack() async throws {
        let server = try #require(RedisTestServer.shared)
        let store = try SDRedisDiskCache(url: server.url, namespace: unique("fleetnote"), options: patient())
        let data = try fixture()
        store.noteShared(forKey: "a", bytes: data.count)
        try store.setData(data, forKey: "a", extendedData: nil)
        #expect(!store.containsData(forKey: "a"))  // skipped: the note said Redis has these bytes
        try store.setData(data, forKey: "a", extendedData: nil)
        #expect(store.containsData(forKey: "a"))  // a note is used once
        store.noteShared(forKey: "b", bytes: data.count + 1)
        try store.setData(data, forKey: "b", extendedData: nil)
        #expect(store.containsData(forKey: "b"))  // other bytes (a serializer's) are written
    }

    @Test("An owner that died: its lease expires and one waiter takes over and fetches")
    func takeover() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        let id = unique("dead")
        let url = try #require(URL(string: servers.fault + "/etag?id=\(id)"))
        let host = try Host(server, namespace: ns)
        // a lease of a process that is gone: nobody renews it
        let lease = host.redis.store.leaseKey(forKey: url.absoluteString)
        _ = host.redis.store.client.command("SET", lease, "dead-owner", "PX", "1000")
        let t0 = Date()
        let (image, error) = await host.load(url)
        #expect(image != nil && error == nil)
        #expect(Date().timeIntervalSince(t0) >= 0.8)  // it waited for the lease to expire
        #expect(hits(servers, id) == 1)
        #expect(host.fleet?.statistics.tookOver == 1)
    }

    @Test("A failed fetch leaves a fetch-yourselves mark: the waiters fetch at once, in parallel")
    func failureMark() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        let id = unique("fail")
        // the first request fails (503); later ones succeed
        let url = try #require(URL(string: servers.fault + "/flaky?id=\(id)&fail=1"))
        var o = patientFleet()
        o.failureMarkTTL = 3600  // a starved TSan run takes a minute a test: the mark must outlast it
        let owner = try Host(server, namespace: ns, options: o)
        let (none, error) = await owner.load(url)
        #expect(none == nil && error != nil)
        #expect(owner.fleet?.statistics.fetched == 1)
        #expect(leaseValue(owner, url) == "-")  // the mark, not the lease
        let others = try (0..<2).map { _ in try Host(server, namespace: ns, options: o) }
        async let x = others[0].load(url)
        async let y = others[1].load(url)
        let results = await [x, y]
        #expect(results.allSatisfy { $0.0 != nil })
        // No lease while the mark stands: neither takes one nor waits for one;
        // whoever looks up front fetches at once. (On a starved machine one
        // host can finish and store before the other even asks its caches;
        // that one is then a cache hit, so count fetches against the origin.)
        let stats = others.compactMap { $0.fleet?.statistics }
        #expect(stats.count == 2 && stats.allSatisfy { $0.fetched == 0 && $0.tookOver == 0 && $0.waitsTimedOut == 0 })
        let uncoordinated = stats.map(\.uncoordinated).reduce(0, +)
        #expect(uncoordinated >= 1)
        #expect(hits(servers, id) == 1 + uncoordinated)  // every origin request after the failure was one of those
    }

    @Test("A 404 or 410 is remembered across the fleet for goneTTL: other hosts fail alike without asking the origin; a 403 is not")
    func goneRemembered() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet")
        var o = patientFleet()
        o.goneTTL = 3600  // both marks outlast a starved run (a minute a test under TSan and load)
        o.failureMarkTTL = 3600
        func statusOf(_ error: (any Error)?) -> Int? {
            guard let e = error as? SDWebImageError, e.code == .invalidDownloadStatusCode else { return nil }
            return e.statusCode
        }
        for status in [404, 410] {
            let id = unique("gone\(status)")
            let url = try #require(URL(string: servers.fault + "/flaky?id=\(id)&fail=1000&status=\(status)"))
            let owner = try Host(server, namespace: ns, options: o)
            let (none, error) = await owner.load(url)
            #expect(none == nil && statusOf(error) == status)
            #expect(leaseValue(owner, url) == "-\(status)")
            let others = try (0..<2).map { _ in try Host(server, namespace: ns, options: o) }
            async let x = others[0].load(url)
            async let y = others[1].load(url)
            let results = await [x, y]
            #expect(results.allSatisfy { $0.0 == nil && statusOf($0.1) == status })
            let stats = others.compactMap { $0.fleet?.statistics }
            #expect(stats.count == 2 && stats.allSatisfy { $0.gone == 1 && $0.fetched == 0 && $0.uncoordinated == 0 })
            #expect(hits(servers, id) == 1)  // only the owner asked
        }
        // 403 depends on who asks: the plain mark, and the others fetch
        let id = unique("forbidden")
        let url = try #require(URL(string: servers.fault + "/flaky?id=\(id)&fail=1000&status=403"))
        let owner = try Host(server, namespace: ns, options: o)
        #expect(statusOf(await owner.load(url).1) == 403)
        let other = try Host(server, namespace: ns, options: o)
        #expect(statusOf(await other.load(url).1) == 403)
        #expect(other.fleet?.statistics.gone == 0 && other.fleet?.statistics.uncoordinated == 1)
        #expect(hits(servers, id) == 2)
        // goneTTL 0: a 404 leaves the plain mark too
        var off = o
        off.goneTTL = 0
        let id0 = unique("gone-off")
        let url0 = try #require(URL(string: servers.fault + "/flaky?id=\(id0)&fail=1000&status=404"))
        _ = await (try Host(server, namespace: ns, options: off)).load(url0)
        let late = try Host(server, namespace: ns, options: off)
        #expect(statusOf(await late.load(url0).1) == 404 && late.fleet?.statistics.gone == 0)
        #expect(hits(servers, id0) == 2)
    }

    @Test("A waiter cancelled while it waits answers cancelled and fetches nothing")
    func cancelWaiter() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let host = try Host(server, namespace: unique("fleet"))
        let id = unique("cancel")
        let url = try #require(URL(string: servers.fault + "/etag?id=\(id)"))
        _ = host.redis.store.client.command("SET", host.redis.store.leaseKey(forKey: url.absoluteString), "other", "PX", "20000")
        let error: (any Error)? = await withCheckedContinuation { k in
            let op = host.manager.loadImage(with: url) { _, _, error, _, finished, _ in
                if finished { k.resume(returning: error) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { op?.cancel() }
        }
        #expect((error as? SDWebImageError)?.code == .cancelled)
        #expect(hits(servers, id) == 0)
    }

    @Test("Redis down: every load goes straight to the origin")
    func redisDown() async throws {
        let dead = try RedisTestServer(name: "fleetdown")
        dead.run("kill9")
        let servers = try #require(TestServers.shared)
        let host = try Host(dead, namespace: "d")
        let id = unique("down")
        let (image, error) = await host.load(try #require(URL(string: servers.fault + "/etag?id=\(id)")))
        #expect(image != nil && error == nil)
        #expect(host.fleet?.statistics.uncoordinated == 1)
        #expect(hits(servers, id) == 1)
    }

    @Test("A 304 through the manager with Redis as L2: a new host serves the Redis entry, revalidates it and renews it")
    func revalidation() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("fleet304")
        let id = unique("rev")
        let url = try #require(URL(string: servers.fault + "/etag?id=\(id)&etag=r1"))
        let first = try Host(server, namespace: ns, fleet: false)
        #expect(await first.load(url).0 != nil)
        first.redis.waitForPendingWrites()
        let key = first.redis.store.redisKey(forKey: url.absoluteString)
        _ = first.redis.store.client.command("PEXPIRE", key, "60000")  // shorter than the TTL: a touch shows
        let second = try Host(server, namespace: ns, fleet: false)
        let calls = Counter()
        let done: (SDImageCacheType, (any Error)?) = await withCheckedContinuation { k in
            second.manager.loadImage(with: url, options: [.refreshCached]) { image, _, error, type, finished, _ in
                if calls.add() == 1 { k.resume(returning: (type, error)) }
            }
        }
        #expect(done.0 == .disk && done.1 == nil)  // the Redis entry, decoded
        var revalidated = false
        for _ in 0..<1200 where !revalidated {  // up to a minute: a starved run
            try await Task.sleep(nanoseconds: 50_000_000)
            revalidated = hits(servers, id + ":304") == 1
        }
        #expect(revalidated)
        #expect(hits(servers, id) == 2)  // the first fetch and the conditional request
        second.redis.waitForPendingWrites()
        var renewed = false
        for _ in 0..<1200 where !renewed {
            if case .integer(let ms)? = second.redis.store.client.command("PTTL", key) { renewed = ms > 60_000 }
            if !renewed { try await Task.sleep(nanoseconds: 50_000_000) }
        }
        #expect(renewed)  // the touch on the 304 renewed the TTL
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(calls.value == 1)  // a 304: no second completion
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    @discardableResult
    func add() -> Int { lock.lock(); defer { lock.unlock() }; n += 1; return n }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
