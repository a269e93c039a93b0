import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
@testable import SDWebImageRedis
import Testing

/// A redis-server of the tests' own (Tests/Servers/redis.sh: loopback, no
/// persistence), ended by a watchdog when the test process goes.
final class RedisTestServer: @unchecked Sendable {
    let dir: String
    let url: String
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Servers/redis.sh").path

    /// One server for the suites that only store and query.
    static let shared = try? RedisTestServer(name: "shared")

    init(name: String, extra: String = "") throws {
        dir = NSTemporaryDirectory() + "sdredis-\(getpid())-\(name)"
        guard system("bash '\(Self.script)' start '\(dir)' \(getpid()) \(extra)") == 0,
              let env = try? String(contentsOfFile: dir + "/env", encoding: .utf8),
              let line = env.split(separator: "\n").first, line.hasPrefix("SD_TEST_REDIS=") else {
            throw RedisError("redis-server did not start")
        }
        url = String(line.dropFirst("SD_TEST_REDIS=".count))
    }

    func run(_ cmd: String) { _ = system("bash '\(Self.script)' \(cmd) '\(dir)'") }

    /// A server on a free port that answers with bytes that are not RESP.
    func garbageURL() -> String? {
        run("garbage")
        return (try? String(contentsOfFile: dir + "/env.garbage", encoding: .utf8))?
            .split(separator: "\n").first.map { String($0.dropFirst("SD_TEST_GARBAGE=".count)) }
    }
}

func fixture(_ w: Int = 40, _ h: Int = 30) throws -> Data {
    try TestServers.jpeg(width: w, height: h, progressive: false)
}

/// Values pass through a lock (`awaitCallback`), so ThreadSanitizer sees the
/// image decoded on the cache's queue handed to the awaiting task.
func query(_ c: any SDImageCacheProtocol, _ key: String) async -> (SDImage?, SDImageCacheType) {
    await awaitCallback { done in
        _ = c.queryImage(forKey: key, options: [], context: nil, cacheType: .all) { image, _, type in
            done((image, type))
        }
    }
}

func store(_ c: any SDImageCacheProtocol, _ data: Data, _ key: String, extended: Data? = nil) async -> (any Error)? {
    await awaitCallback { done in
        c.store(nil, imageData: data, forKey: key, cacheType: .disk, extendedData: extended) { done($0) }
    }
}

func unique(_ s: String) -> String { "\(s)-\(UUID().uuidString)" }

/// The functional tests' options: a reply may take as long as a starved
/// machine needs (`Patience`; the 0.5 s default is for a Redis on the LAN;
/// the dead-Redis tests keep it).
func patient() -> SDRedisDiskCache.Options {
    var o = SDRedisDiskCache.Options()  // patience: the helper itself
    o.timeout = Patience.wait
    return o
}

/// The fleet tests' options: leases, waits and marks outlast any starved
/// step (`Patience`); a test of a takeover or of an expiry shortens the one
/// it is about.
func patientFleet() -> SDRedisFleetLoader.Options {
    var o = SDRedisFleetLoader.Options()  // patience: the helper itself
    o.leaseTTL = Patience.wait
    o.maxWait = Patience.wait
    o.failureMarkTTL = Patience.wait
    o.goneTTL = Patience.wait
    return o
}

@Suite("SDImageRedisCache: the shared tier on a real redis-server")
struct RedisCacheTests {
    @Test("Store, query, contains, remove and clear; values are namespaced under hashed keys")
    func basics() async throws {
        let server = try #require(RedisTestServer.shared)
        let redis = try SDImageRedisCache(url: server.url, namespace: unique("basics"), options: patient())
        let data = try fixture()
        #expect(await store(redis, data, "http://example.com/a.jpg") == nil)
        let (image, type) = await query(redis, "http://example.com/a.jpg")
        #expect(image?.size.width == 40 && type == .disk)
        #expect(redis.store.redisKey(forKey: "http://example.com/a.jpg")
            .hasPrefix("sdwebimage:\(redis.store.namespace):{"))
        #expect(redis.store.data(forKey: "http://example.com/a.jpg") == data)
        let other = try SDImageRedisCache(url: server.url, namespace: unique("other"), options: patient())
        #expect(await query(other, "http://example.com/a.jpg").0 == nil)  // namespaces do not mix

        await withCheckedContinuation { k in redis.removeImage(forKey: "http://example.com/a.jpg", cacheType: .all) { k.resume() } }
        #expect(await query(redis, "http://example.com/a.jpg").0 == nil)
        for i in 0..<3 { _ = await store(redis, data, "k\(i)") }
        #expect(redis.store.totalCount() == 3)
        await withCheckedContinuation { k in redis.clear(with: .all) { k.resume() } }
        #expect(redis.store.totalCount() == 0)
    }

    @Test("Under SDImageCache through diskCacheClass: the namespace is the last part of the Redis URL path")
    func diskCacheClass() async throws {
        let server = try #require(RedisTestServer.shared)
        let config = SDImageCacheConfig()
        config.diskCacheClass = SDRedisDiskCache.self
        config.shouldCacheImagesInMemory = false
        let ns = unique("viaclass")
        let cache = SDImageCache(namespace: ns, diskCacheDirectory: server.url + "/0", config: config)
        let redis = try #require(cache.diskCache as? SDRedisDiskCache)
        #expect(redis.namespace == ns && redis.endpoint.database == 0)
        #expect(await store(cache, try fixture(), "a") == nil)
        cache.waitForPendingWrites()
        #expect(await query(cache, "a").0?.size.width == 40)
        let direct = try SDRedisDiskCache(url: server.url, namespace: ns)
        #expect(direct.containsData(forKey: "a"))  // the same Redis key
        direct.removeAllData()
    }

    @Test("Validators ride with the entry; entries expire with the TTL, a touch renews it")
    func validatorsAndExpiry() async throws {
        // Nothing here assumes wall time passes slowly (a starved TSan run took
        // 65 s): TTLs are read with PTTL, shortened by hand where a renewal
        // must show, and the one expiry waited for is Redis's own.
        let server = try #require(RedisTestServer.shared)
        var o = patient()
        o.ttl = 3600
        let ns = unique("ttl")
        let redis = try SDImageRedisCache(url: server.url, namespace: ns, options: o)
        let validators = Data(#"{"etag":"\"v1\""}"#.utf8)
        #expect(await store(redis, try fixture(), "a", extended: validators) == nil)
        #expect(redis.extendedData(forKey: "a") == validators)
        try redis.storeExtendedData(Data("v2".utf8), forKey: "a")
        #expect(redis.extendedData(forKey: "a") == Data("v2".utf8))
        #expect(await query(redis, "a").0 != nil)  // the bytes survived the rewrite
        #expect(throws: (any Error).self) { try redis.storeExtendedData(Data(), forKey: "none") }

        func pttl(_ key: String) -> Int {
            let r = redis.store.client.command([Array("PTTL".utf8), Array(redis.store.redisKey(forKey: key).utf8)])
            if case .integer(let ms)? = r { return ms }
            return -3
        }
        let first = pttl("a")
        #expect(first > 0 && first <= 3_600_000)  // the rewrite kept the TTL
        // shorten it by hand: the touch must bring it back to the full TTL
        _ = redis.store.client.command([Array("PEXPIRE".utf8), Array(redis.store.redisKey(forKey: "a").utf8), Array("100000".utf8)])
        #expect(pttl("a") <= 100_000)
        redis.touchDiskEntry(forKey: "a")
        redis.waitForPendingWrites()
        #expect(pttl("a") > 100_000)  // renewed

        var short = patient()
        short.ttl = 1
        let brief = try SDImageRedisCache(url: server.url, namespace: ns, options: short)
        #expect(await store(brief, try fixture(), "b") == nil)
        let set = pttl("b")
        #expect((set > 0 && set <= 1000) || set == -2)  // stored with its 1 s TTL (-2: already gone, a stalled run)
        try await Task.sleep(nanoseconds: 2_500_000_000)  // at least that long, however slow the machine
        #expect(await query(brief, "b").0 == nil)  // Redis expired it
    }

    @Test("A damaged or foreign value is a miss and is deleted; an oversized one is not stored")
    func damagedValues() async throws {
        let server = try #require(RedisTestServer.shared)
        var o = patient()
        o.maxValueBytes = 4000
        let redis = try SDImageRedisCache(url: server.url, namespace: unique("damaged"), options: o)
        let data = try fixture()
        let key = redis.store.redisKey(forKey: "x")
        let good = SDRedisDiskCache.encode(data, extended: nil, stored: Date())
        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        for bad in [Array("not ours".utf8), Array(good.dropLast()), flipped] {
            _ = redis.store.client.command([Array("SET".utf8), Array(key.utf8), bad])
            #expect(await query(redis, "x").0 == nil)
            #expect(!redis.store.containsData(forKey: "x"))  // dropped
        }
        _ = redis.store.client.command([Array("SET".utf8), Array(key.utf8), good])
        #expect(await query(redis, "x").0 != nil)
        let big = try fixture(400, 300)
        #expect(big.count > 4000)
        #expect(await store(redis, big, "big") == nil)  // not an error...
        #expect(!redis.store.containsData(forKey: "big"))  // ...just not kept
    }

    @Test("As the L2 of a caches manager: a second process-like manager with an empty local cache gets the image from Redis, not the origin")
    func secondTier() async throws {
        let server = try #require(RedisTestServer.shared)
        let servers = try #require(TestServers.shared)
        let ns = unique("l2")
        let id = unique("l2hits")
        let url = try #require(URL(string: servers.fault + "/flaky?id=\(id)&fail=0"))
        func manager() throws -> SDWebImageManager {
            let local = SDImageCache(namespace: "l2", diskCacheDirectory: NSTemporaryDirectory() + unique("local"))
            let caches = SDImageCachesManager()
            caches.caches = [local, try SDImageRedisCache(url: server.url, namespace: ns, options: patient())]
            return SDWebImageManager(cache: caches, loader: patientDownloader())
        }
        let first = try manager()
        let r1 = try await first.loadImage(with: url)
        #expect(r1.image != nil && r1.cacheType == SDImageCacheType.none)
        (first.imageCache as? SDImageCachesManager)?.caches.compactMap { $0 as? SDImageRedisCache }
            .forEach { $0.waitForPendingWrites() }
        let r2 = try await manager().loadImage(with: url)
        #expect(r2.image != nil && r2.cacheType == .disk)
        let hits = try String(contentsOf: try #require(URL(string: servers.fault + "/hits?id=\(id)")), encoding: .utf8)
        #expect(hits == "1")  // one origin request for two managers
    }

    @Test("tiered(behind:): the local cache answers first (no Redis call), a fetch fills both, a Redis hit is copied to the local disk with its validators and counted")
    func tieredOrder() async throws {
        let server = try RedisTestServer(name: "tiered")  // its own: the command counts below are exact
        defer { server.run("stop") }
        let servers = try #require(TestServers.shared)
        let url = try #require(URL(string: servers.fault + "/etag?id=\(unique("tiered"))&etag=t1"))
        let key = url.absoluteString
        func host() throws -> (SDWebImageManager, SDImageCache, SDImageRedisCache) {
            let local = SDImageCache(namespace: "tiered", diskCacheDirectory: NSTemporaryDirectory() + unique("local"))
            let redis = try SDImageRedisCache(url: server.url, namespace: "t", options: patient())
            return (SDWebImageManager(cache: redis.tiered(behind: local), loader: patientDownloader()),
                    local, redis)
        }
        func gets(_ r: SDImageRedisCache) -> Int {
            guard case .string(let s)? = r.store.client.command("INFO", "commandstats") else { return -1 }
            let text = String(decoding: s, as: UTF8.self)
            guard let line = text.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_get:") }),
                  let calls = line.split(separator: "=").dropFirst().first?.split(separator: ",").first else { return 0 }
            return Int(calls) ?? -1
        }
        let (m1, local1, redis1) = try host()
        #expect(try await m1.loadImage(with: url).cacheType == SDImageCacheType.none)
        local1.waitForPendingWrites()
        redis1.waitForPendingWrites()
        #expect(local1.diskImageDataExists(withKey: key) && redis1.store.containsData(forKey: key))  // both filled
        local1.clearMemory()
        let before = gets(redis1)
        #expect(try await m1.loadImage(with: url).cacheType == .disk)
        #expect(gets(redis1) == before)  // the local disk answered; Redis was not asked
        #expect(redis1.hits == 0)

        let (m2, local2, redis2) = try host()
        #expect(try await m2.loadImage(with: url).cacheType == .disk)  // from Redis
        #expect(redis2.hits == 1)  // what .disk alone does not say
        local2.waitForPendingWrites()
        #expect(local2.diskImageDataExists(withKey: key))  // copied down
        let raw = try #require(local2.extendedData(forKey: key))
        #expect(try JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw).etag == "\"t1\"")
    }
}

/// Faults lose nothing: each ends in a miss (or a dropped store) within the
/// timeout, and the tier comes back by itself.
@Suite("SDImageRedisCache: a Redis that hangs, dies, fills up or speaks garbage", .serialized)
struct RedisFaultTests {
    /// The tier's own call, timed: the cache's query also waits for its
    /// callback queue, which other suites running meanwhile can keep busy.
    func timed<T>(_ body: () throws -> T) rethrows -> (T, TimeInterval) {
        let t0 = Date()
        let v = try body()
        return (v, Date().timeIntervalSince(t0))
    }

    @Test("Paused (SIGSTOP): misses within the timeout, stores dropped; resumed: works again")
    func paused() async throws {
        let server = try RedisTestServer(name: "pause")
        defer { server.run("stop") }
        let redis = try SDImageRedisCache(url: server.url, namespace: "p")
        #expect(await store(redis, try fixture(), "a") == nil)
        server.run("pause")
        // 0.5 s timeouts; a hang would never return, and 10 s leaves room for a starved CI machine
        let (hit, took) = timed { redis.store.data(forKey: "a") }
        #expect(hit == nil && took < 10)
        let (again, took2) = timed { redis.store.data(forKey: "a") }
        #expect(again == nil && took2 < 10)
        #expect(await query(redis, "a").0 == nil)
        server.run("resume")
        var back = false
        for _ in 0..<240 where !back {  // up to a minute: a starved run
            try await Task.sleep(nanoseconds: 250_000_000)
            back = await query(redis, "a").0 != nil
        }
        #expect(back)
        #expect(redis.store.connectionFailures >= 1)
    }

    @Test("Killed (-9) and restarted empty: misses meanwhile, reconnects by itself")
    func killedAndRestarted() async throws {
        let server = try RedisTestServer(name: "kill")
        defer { server.run("stop") }
        let redis = try SDImageRedisCache(url: server.url, namespace: "k")
        #expect(await store(redis, try fixture(), "a") == nil)
        server.run("kill9")
        let (miss, took) = timed { redis.store.data(forKey: "a") }
        #expect(miss == nil && took < 10)
        #expect(await query(redis, "a").0 == nil)
        #expect(await store(redis, try fixture(), "b") == nil)  // dropped, not an error
        server.run("restart")
        var stored = false
        for _ in 0..<240 where !stored {  // up to a minute: a starved run
            try await Task.sleep(nanoseconds: 250_000_000)
            _ = await store(redis, try fixture(), "c")
            stored = await query(redis, "c").0 != nil
        }
        #expect(stored)
    }

    @Test("Full under noeviction: the store reports Redis's error, queries still work")
    func full() async throws {
        let server = try RedisTestServer(name: "full", extra: "--maxmemory 2mb --maxmemory-policy noeviction")
        defer { server.run("stop") }
        let redis = try SDImageRedisCache(url: server.url, namespace: "f")
        let big = try fixture(600, 600)
        var error: (any Error)?
        for i in 0..<200 where error == nil { error = await store(redis, big, "e\(i)") }
        #expect("\(error.map { "\($0)" } ?? "")".contains("OOM"))
        #expect(await query(redis, "e0").0 != nil)
    }

    @Test("A server answering garbage: a miss, never a crash or a wrong image")
    func garbage() async throws {
        let server = try RedisTestServer(name: "garbage")
        defer { server.run("stop") }
        let url = try #require(server.garbageURL())
        let redis = try SDImageRedisCache(url: url, namespace: "g")
        let (miss, took) = timed { redis.store.data(forKey: "a") }
        #expect(miss == nil && took < 10)
        #expect(await query(redis, "a").0 == nil)
        #expect(await store(redis, try fixture(), "a") == nil)
        #expect(redis.store.connectionFailures >= 1)
    }

    @Test("The pool is sized to the shared downloader's concurrency unless told otherwise")
    func poolSize() throws {
        #expect(try SDRedisDiskCache(url: "redis://127.0.0.1:1").client.connections
            == SDWebImageDownloaderConfig.default.maxConcurrentDownloads)
        var o = SDRedisDiskCache.Options()  // patience: no server is asked
        o.connections = 3
        #expect(try SDRedisDiskCache(url: "redis://127.0.0.1:1", options: o).client.connections == 3)
    }

    @Test("Bad URLs are refused with a reason")
    func urls() throws {
        #expect(throws: RedisError.self) { try RedisEndpoint(url: "http://x") }
        #expect(throws: RedisError.self) { try RedisEndpoint(url: "rediss://x") }
        #expect(throws: RedisError.self) { try RedisEndpoint(url: "redis://x/abc") }
        let e = try RedisEndpoint(url: "redis://u:p%40ss@h:7000/3")
        #expect(e.host == "h" && e.port == 7000 && e.database == 3 && e.username == "u" && e.password == "p@ss")
    }
}
