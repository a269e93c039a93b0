import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// A disk tier in a dictionary: what a database or object-store backend
/// would do, through SDImageCacheConfig.diskCacheClass.
final class DictionaryDiskCache: SDDiskCacheProtocol, @unchecked Sendable {
    nonisolated(unsafe) static var opened: [String: DictionaryDiskCache] = [:]
    private let lock = NSLock()
    private var items: [String: (data: Data, extended: Data?, touched: Date)] = [:]
    private(set) var sweeps = 0

    init(cachePath: String) throws {
        guard !cachePath.contains("refuse") else { throw POSIXError(.EACCES) }
        Self.opened[cachePath] = self
    }

    private func locked<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }
    func containsData(forKey key: String) -> Bool { locked { items[key] != nil } }
    func data(forKey key: String) -> Data? { locked { items[key]?.data } }
    func setData(_ data: Data, forKey key: String, extendedData: Data?) throws {
        locked { items[key] = (data, extendedData, Date()) }
    }
    func extendedData(forKey key: String) -> Data? { locked { items[key]?.extended } }
    func setExtendedData(_ data: Data?, forKey key: String) throws { locked { items[key]?.extended = data } }
    func touch(forKey key: String) { locked { items[key]?.touched = Date() } }
    func removeData(forKey key: String) { _ = locked { items.removeValue(forKey: key) } }
    func removeAllData() { locked { items.removeAll() } }
    func removeExpiredData(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType) -> Int {
        locked {
            sweeps += 1
            let old = items.filter { maxAge >= 0 && $0.value.touched <= Date().addingTimeInterval(-maxAge) }.map(\.key)
            for k in old { items.removeValue(forKey: k) }
            return old.count
        }
    }
    func entries() -> [DiskCache.Entry] {
        locked {
            items.map { DiskCache.Entry(name: $0.key, bytes: $0.value.data.count, accessDate: $0.value.touched,
                                        modificationDate: $0.value.touched, changeDate: $0.value.touched) }
        }
    }
    func totalSize() -> Int { entries().reduce(0) { $0 + $1.bytes } }
    func totalCount() -> Int { locked { items.count } }
    func filePath(forKey key: String) -> String? { nil }
}

/// A memory tier that counts what it is asked, over the default one.
final class CountingMemoryCache: SDMemoryCacheProtocol, @unchecked Sendable {
    private let inner: SDMemoryCache
    private let lock = NSLock()
    private var _sets = 0, _limitChanges = 0
    var sets: Int { lock.lock(); defer { lock.unlock() }; return _sets }
    var limitChanges: Int { lock.lock(); defer { lock.unlock() }; return _limitChanges }

    init(config: SDImageCacheConfig) { inner = SDMemoryCache(config: config) }
    func object(forKey key: String) -> SDImage? { inner.object(forKey: key) }
    func setObject(_ object: SDImage, forKey key: String, cost: Int) {
        lock.lock(); _sets += 1; lock.unlock()
        inner.setObject(object, forKey: key, cost: cost)
    }
    func removeObject(forKey key: String) { inner.removeObject(forKey: key) }
    func removeAllObjects() { inner.removeAllObjects() }
    var totalCost: Int { inner.totalCost }
    var totalCount: Int { inner.totalCount }
    func configDidChange(_ config: SDImageCacheConfig) {
        lock.lock(); _limitChanges += 1; lock.unlock()
        inner.configDidChange(config)
    }
}

@Suite("Cache backends: another disk or memory tier under SDImageCache (diskCacheClass, memoryCacheClass)")
struct CacheBackendTests {
    @Test("A dictionary disk tier takes stores, decoded queries, thumbnails, extended data, removal, sweeps and sizes")
    func diskTier() async throws {
        let config = SDImageCacheConfig()
        config.diskCacheClass = DictionaryDiskCache.self
        let c = makeCache("backend", config: config)
        let disk = try #require(c.diskCache as? DictionaryDiskCache)
        let (image, data) = try testImage(64, 48)
        try await c.store(image, imageData: data, forKey: "k", cacheType: .disk)
        #expect(disk.data(forKey: "k") == data && c.cachePath(forKey: "k") == nil)  // a tier without files
        let hit = await c.image(forKey: "k")
        #expect(hit.cacheType == .disk && hit.image?.width == 64)
        let thumb = await c.image(forKey: "k", context: [.imageThumbnailPixelSize: CGSize(width: 16, height: 16)],
                                  cacheType: .disk)
        #expect(thumb.image?.width == 16 && thumb.cacheType == .disk)
        try c.storeExtendedData(Data("meta".utf8), forKey: "k")
        #expect(c.extendedData(forKey: "k") == Data("meta".utf8))
        #expect(c.totalDiskCount() == 1 && c.totalDiskSize() == data.count)
        await c.deleteOldFiles()
        #expect(disk.sweeps >= 1 && disk.containsData(forKey: "k"))
        await c.removeImage(forKey: "k", cacheType: .all)
        #expect(await c.containsImage(forKey: "k") == .none)
        try await c.store(image, imageData: data, forKey: "k2", cacheType: .disk)
        await c.clearDisk()
        #expect(disk.totalCount() == 0)

        // through the manager: a load is served from the plugged-in tier, no network
        try await c.store(nil, imageData: data, forKey: "http://127.0.0.1:9/none.jpg", cacheType: .disk)
        let m = SDWebImageManager(cache: c, loader: patientDownloader())
        let r = try await m.loadImage(with: URL(string: "http://127.0.0.1:9/none.jpg"), options: .fromCacheOnly)
        #expect(r.image?.width == 64 && r.cacheType == .disk)
    }

    @Test("A disk tier that cannot open makes stores fail with its error, not crash")
    func refusingTier() async throws {
        let config = SDImageCacheConfig()
        config.diskCacheClass = DictionaryDiskCache.self
        let c = SDImageCache(namespace: "refuse", diskCacheDirectory: "/tmp/refuse-\(getpid())", config: config)
        #expect(c.diskCache == nil)
        let (image, data) = try testImage()
        await #expect(throws: (any Error).self) { try await c.store(image, imageData: data, forKey: "k") }
        #expect(c.imageFromMemoryCache(forKey: "k") != nil)  // memory still took it
    }

    @Test("A memory tier of one's own gets every store, limit changes, and reports the cost")
    func memoryTier() async throws {
        let config = SDImageCacheConfig()
        config.memoryCacheClass = CountingMemoryCache.self
        let c = makeCache("memtier", config: config)
        let mem = try #require(c.memoryCache as? CountingMemoryCache)
        let (image, _) = try testImage(10, 10)
        c.storeImage(toMemory: image, forKey: "a")
        #expect(mem.sets == 1 && c.imageFromMemoryCache(forKey: "a") === image && c.memoryCost == image.cost)
        c.config.maxMemoryCount = 1
        #expect(mem.limitChanges == 1)
        c.storeImage(toMemory: image, forKey: "b")
        #expect(c.memoryCount == 1 && c.imageFromMemoryCache(forKey: "a") == nil)
        c.clearMemory()
        #expect(c.memoryCount == 0)
    }
}
