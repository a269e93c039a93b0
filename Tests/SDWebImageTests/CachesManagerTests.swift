import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

extension SDImageCacheProtocol {
    func query(_ key: String, _ type: SDImageCacheType = .all, context: SDWebImageContext? = nil) async
        -> (image: SDImage?, data: Data?, type: SDImageCacheType) {
        await awaitCallback { done in  // through a lock: TSan sees the image's hand-off
            _ = queryImage(forKey: key, options: [], context: context, cacheType: type) { done(($0, $1, $2)) }
        }
    }
    func put(_ image: SDImage, _ data: Data?, _ key: String, _ type: SDImageCacheType = .all) async {
        await withCheckedContinuation { c in store(image, imageData: data, forKey: key, cacheType: type) { _ in c.resume() } }
    }
    func contains(_ key: String, _ type: SDImageCacheType = .all) async -> SDImageCacheType {
        await withCheckedContinuation { c in containsImage(forKey: key, cacheType: type) { c.resume(returning: $0) } }
    }
    func remove(_ key: String, _ type: SDImageCacheType = .all) async {
        await withCheckedContinuation { c in removeImage(forKey: key, cacheType: type) { c.resume() } }
    }
    func clearAll(_ type: SDImageCacheType = .all) async {
        await withCheckedContinuation { c in clear(with: type) { c.resume() } }
    }
}

/// Ports of SDImageCacheTests 43, 44, 46 and 49–57, and of testThatLoadersManagerWorks.
@Suite("SDImageCachesManager, SDImageLoadersManager, weak memory cache, folder moves")
struct CachesManagerTests {
    @Test("Through the caches manager: query (memory-only entry; no write-back with storeCacheType disk), store, remove, contains, clear")
    func operations() async throws {
        let c = makeCache()
        let m = SDImageCachesManager(caches: [c])
        let (image, data) = try testImage()
        await m.put(image, nil, "mem", .memory)
        #expect(await m.query("mem").image === image)                       // 50
        await m.put(image, data, "both")
        #expect(await m.query("both").image != nil && c.diskImageDataExists(withKey: "both"))  // 51
        try c.storeImageData(toDisk: data, forKey: "disk")
        let hit = await m.query("disk", context: [.storeCacheType: SDImageCacheType.disk])
        #expect(hit.type == .disk && c.imageFromMemoryCache(forKey: "disk") == nil)  // 49
        #expect(await m.contains("mem") == .memory)                         // 53
        await m.remove("both", .disk)
        #expect(c.imageFromMemoryCache(forKey: "both") != nil && !c.diskImageDataExists(withKey: "both"))  // 52
        await m.clearAll()
        #expect(c.imageFromMemoryCache(forKey: "mem") == nil && c.totalDiskCount() == 0)  // 54
    }

    @Test("lowestOnly touches only the first cache, highestOnly only the last, for every operation")
    func simplePolicies() async throws {
        let (low, high) = (makeCache(), makeCache())
        let m = SDImageCachesManager(caches: [low, high])
        let (image, data) = try testImage()
        for (policy, used, unused) in [(SDImageCachesManagerOperationPolicy.lowestOnly, low, high), (.highestOnly, high, low)] {
            m.queryOperationPolicy = policy
            m.storeOperationPolicy = policy
            m.removeOperationPolicy = policy
            m.containsOperationPolicy = policy
            m.clearOperationPolicy = policy
            await m.put(image, data, "k")
            #expect(used.imageFromMemoryCache(forKey: "k") != nil && unused.imageFromMemoryCache(forKey: "k") == nil)
            await unused.put(image, data, "only-unused")
            let q = await m.query("only-unused"), has = await m.contains("only-unused")
            #expect(q.image == nil && has == .none)
            #expect(await m.contains("k") == .memory)
            await m.remove("k")
            #expect(used.imageFromMemoryCache(forKey: "k") == nil && unused.imageFromMemoryCache(forKey: "only-unused") != nil)
            await m.clearAll()
            #expect(unused.imageFromMemoryCache(forKey: "only-unused") != nil)
            await unused.clearAll()
        }
    }

    @Test("concurrent: the quick memory hit in one cache wins; serial: the highest cache answers first")
    func concurrentAndSerial() async throws {
        let (c1, c2) = (makeCache(), makeCache())
        let m = SDImageCachesManager(caches: [c1, c2])
        let (image, data) = try testImage()
        await c1.put(image, data, "k", .memory)
        try c2.storeImageData(toDisk: data, forKey: "k")
        m.containsOperationPolicy = .concurrent
        c2.config.callbackQueue.suspend()  // c2's disk answer may not overtake c1's memory hit
        let first = await m.contains("k")
        c2.config.callbackQueue.resume()
        #expect(first == .memory)                                           // 56
        m.containsOperationPolicy = .serial
        #expect(await m.contains("k") == .disk)                             // 57: c2 is the highest
        m.queryOperationPolicy = .serial
        #expect(await m.query("k").type == .disk)
        m.queryOperationPolicy = .concurrent
        #expect(await m.query("k").image != nil)
        #expect(await m.query("missing").image == nil)                      // all miss: one answer, a miss
        m.queryOperationPolicy = .serial
        #expect(await m.query("missing").type == .none)
        // a cancelled query answers once, at once, with a miss (c2's disk
        // answer is held back so the cancel comes first)
        let answers = Counter(), misses = Counter()
        c2.config.callbackQueue.suspend()
        let op = m.queryImage(forKey: "k", options: [], context: nil, cacheType: .disk) { image, _, _ in
            answers.add()
            if image == nil { misses.add() }
        }
        op?.cancel()
        #expect(op != nil && answers.value == 1 && misses.value == 1)
        c2.config.callbackQueue.resume()
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(answers.value == 1)
    }

    @Test("Concurrent queries over two caches, cancelled at random moments from other threads, answer exactly once")
    func cancelStress() async throws {
        let (c1, c2) = (makeCache(), makeCache())
        let m = SDImageCachesManager(caches: [c1, c2])
        m.queryOperationPolicy = .concurrent
        let (image, data) = try testImage()
        await c1.put(image, data, "k", .disk)
        try c2.storeImageData(toDisk: data, forKey: "k")
        let answers = Counter()
        let n = 300
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<n {
                let op = m.queryImage(forKey: "k", options: [], context: nil, cacheType: .disk) { _, _, _ in answers.add() }
                group.addTask {
                    if i % 3 != 0 { try? await Task.sleep(nanoseconds: UInt64(i % 7) * 100_000) }
                    op?.cancel()
                }
            }
        }
        #expect(await eventually { answers.value == n })
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(answers.value == n)  // none twice
    }

    @Test("A manager over a caches manager and a loaders manager: a scheme of our own next to HTTP")
    func loadersManager() async throws {
        let s = try #require(TestServers.shared)
        let loaders = SDImageLoadersManager(loaders: [patientDownloader()])
        let own = SolidLoader()
        loaders.addLoader(own)
        #expect(loaders.canRequestImage(for: URL(string: "solid://7x5")) && !loaders.canRequestImage(for: URL(string: "ftp://x/y")))
        let m = SDWebImageManager(cache: SDImageCachesManager(caches: [makeCache()]), loader: loaders)
        let solid = await m.load(URL(string: "solid://7x5"))
        #expect(solid.last?.image?.width == 7 && solid.last?.image?.height == 5)
        let http = await m.load(s.url(s.http, "/img/small.jpg?loaders"))
        #expect(http.last?.image?.width == 64)
        #expect(await m.load(URL(string: "solid://7x5")).last?.type == .memory)
        loaders.removeLoader(own)
        #expect(!loaders.canRequestImage(for: URL(string: "solid://1x1")) && loaders.loaders.count == 1)
    }

    @Test("Weak memory cache: an image evicted by the limits but alive elsewhere comes back; clearMemory forgets it")
    func weakMemoryCache() throws {
        for weak in [false, true] {
            let config = SDImageCacheConfig()
            config.maxMemoryCount = 1
            config.shouldUseWeakMemoryCache = weak
            let c = makeCache(config: config)
            let (a, _) = try testImage(10, 10)
            c.storeImage(toMemory: a, forKey: "a")
            c.storeImage(toMemory: try testImage(11, 11).0, forKey: "b")  // evicts a from the LRU
            #expect((c.imageFromMemoryCache(forKey: "a") === a) == weak)
            c.clearMemory()
            #expect(c.imageFromMemoryCache(forKey: "a") == nil)
            withExtendedLifetime(a) {}
        }
        let config = SDImageCacheConfig()
        config.maxMemoryCount = 1
        config.shouldUseWeakMemoryCache = true
        let c = makeCache(config: config)
        c.storeImage(toMemory: try testImage(10, 10).0, forKey: "gone")  // nobody else holds it
        c.storeImage(toMemory: try testImage(11, 11).0, forKey: "b")
        #expect(c.imageFromMemoryCache(forKey: "gone") == nil)
    }

    @Test("moveCacheDirectory: 100 entries move and the old folder goes; merging into a folder that exists")
    func moveDirectory() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdmove-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let old = SDImageCache(namespace: "old", diskCacheDirectory: root)
        let (_, data) = try testImage()
        for i in 0..<100 { try old.storeImageData(toDisk: data, forKey: "k\(i)") }
        let new = SDImageCache(namespace: "new", diskCacheDirectory: root)
        try new.storeImageData(toDisk: data, forKey: "already")
        try new.moveCacheDirectory(fromPath: old.diskCachePath, toPath: new.diskCachePath)
        #expect(!FileManager.default.fileExists(atPath: old.diskCachePath))
        #expect(new.totalDiskCount() == 101 && new.imageFromDiskCache(forKey: "k42") != nil)
        // a missing source does nothing; a missing destination is made by the move
        try new.moveCacheDirectory(fromPath: root + "/none", toPath: root + "/x")
        #expect(!FileManager.default.fileExists(atPath: root + "/x"))
        try new.moveCacheDirectory(fromPath: new.diskCachePath, toPath: root + "/deeper/moved")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: root + "/deeper/moved").count) == 101)
    }

    @Test("defaultDiskCacheDirectory can be set for new caches, and reset with nil")
    func defaultDirectory() {
        _ = SDImageCache.shared  // made before the change (tests in parallel check its folder)
        let standard = SDImageCache.defaultDiskCacheDirectory!
        let custom = FileManager.default.temporaryDirectory.appendingPathComponent("sddefault-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: custom) }
        SDImageCache.defaultDiskCacheDirectory = custom
        let c = SDImageCache(namespace: "ns")
        SDImageCache.defaultDiskCacheDirectory = nil
        #expect(c.diskCachePath == custom + "/ns")
        #expect(SDImageCache.defaultDiskCacheDirectory == standard)
    }
}

/// Loads `solid://WxH` as a grey image of that size (no network).
final class SolidLoader: SDImageLoader, @unchecked Sendable {
    func canRequestImage(for url: URL?) -> Bool { url?.scheme == "solid" }
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        let size = (url?.host ?? "").split(separator: "x").compactMap { Int($0) }
        guard size.count == 2, let data = try? TestServers.jpeg(width: size[0], height: size[1], progressive: false) else {
            completed?(nil, nil, SDWebImageError(.invalidURL), true)
            return nil
        }
        completed?(SDImage(data: data), data, nil, true)
        return nil
    }
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool { false }
}
