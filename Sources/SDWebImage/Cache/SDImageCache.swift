import Dispatch
import Foundation
import SDCache
import SDCoders

/// `(image, data, cacheType)`: where it was found (`.none` on a miss).
public typealias SDImageCacheQueryCompletionBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ cacheType: SDImageCacheType) -> Void

/// A cancellable cache query. Cancelling a pending query calls its `done`
/// at once (nil, nil, `.none`), on the cancelling thread, exactly once.
public final class SDImageCacheToken: SDWebImageOperation, @unchecked Sendable {
    public let key: String?
    private let lock = NSLock()
    private var done: SDImageCacheQueryCompletionBlock?
    private var _cancelled = false

    init(key: String?, done: SDImageCacheQueryCompletionBlock?) {
        self.key = key
        self.done = done
    }

    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return _cancelled }

    public func cancel() {
        lock.lock()
        guard let d = done else { lock.unlock(); return }
        done = nil
        _cancelled = true
        lock.unlock()
        d(nil, nil, .none)
    }

    /// The one real answer, on `queue` (nil: right here). A cancel that comes
    /// before it runs wins, even once it is queued.
    func finish(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType, on queue: SDCallbackQueue?) {
        guard let queue else { return deliver(image, data, type) }
        queue.async { self.deliver(image, data, type) }
    }

    private func deliver(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType) {
        lock.lock()
        let d = done
        done = nil
        lock.unlock()
        d?(image, data, type)
    }
}

/// The image cache SDWebImage's manager talks to.
public protocol SDImageCacheProtocol: AnyObject, Sendable {
    func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                    cacheType: SDImageCacheType, completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)?
    /// `completion` gets the disk error, if storing to disk failed.
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               completion: (@Sendable ((any Error)?) -> Void)?)
    func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?)
    func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                       completion: @escaping @Sendable (SDImageCacheType) -> Void)
    func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?)

    // Revalidation hooks: the manager keeps an entry's HTTP validators (ETag,
    // Last-Modified) as extended data and sends them with `.refreshCached`.
    // A cache without them still works; it just cannot revalidate.

    /// Extended data stored with the entry for `key`. Default: none.
    func extendedData(forKey key: String?) -> Data?
    /// Store with extended data kept beside the bytes. Default: store without it.
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?)
    /// The server said the entry for `key` is current (a 304): make it new
    /// again for age-based expiry. Default: nothing.
    func touchDiskEntry(forKey key: String?)
    /// Replace the extended data of an existing entry (a 304 brought new
    /// validators or a new max-age). Default: nothing.
    func storeExtendedData(_ data: Data?, forKey key: String?) throws
}

extension SDImageCacheProtocol {
    public func extendedData(forKey key: String?) -> Data? { nil }
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, completion: completion)
    }
    public func touchDiskEntry(forKey key: String?) {}
    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {}
}

/// Memory (strict LRU on decoded pixels) plus disk (one file per key) with
/// SDWebImage 5's API. Disk writes run in order on one queue; reads run
/// concurrently and see writes still in flight, so a store is readable at once.
public final class SDImageCache: SDImageCacheProtocol, @unchecked Sendable {
    public static let shared = SDImageCache(namespace: "default")

    public let config: SDImageCacheConfig
    /// The folder holding this cache's files.
    public let diskCachePath: String
    /// The memory tier (`config.memoryCacheClass`, default `SDMemoryCache`).
    public let memoryCache: any SDMemoryCacheProtocol
    private let weakImages = WeakImageTable()
    /// The disk tier (`config.diskCacheClass`, default `DiskCache`); nil when
    /// it could not be opened (writes then fail with that error).
    public let diskCache: (any SDDiskCacheProtocol)?
    private var disk: (any SDDiskCacheProtocol)? { diskCache }
    private let diskError: (any Error)?
    /// Sweeps the disk tier while the process runs (ioQueue only).
    private let sweeper = DiskSweeper()
    private let ioQueue = DispatchQueue(label: "SDImageCache.io", qos: .utility)
    private let readQueue = DispatchQueue(label: "SDImageCache.read", qos: .userInitiated, attributes: .concurrent)
    private let lock = NSLock()
    /// Disk writes not yet done, so reads see them: data, or nil for a removal.
    private var pending: [String: (generation: UInt64, data: Data?)] = [:]
    private var generation: UInt64 = 0

    private static let directoryLock = NSLock()
    nonisolated(unsafe) private static var customDirectory: String?

    /// The root of caches made without a directory: `$XDG_CACHE_HOME` (else
    /// `~/.cache`) + `/SDWebImage`, unless set; setting nil goes back to that.
    /// Caches made before a change keep their folder.
    public static var defaultDiskCacheDirectory: String! {
        get {
            directoryLock.lock()
            let custom = customDirectory
            directoryLock.unlock()
            if let custom { return custom }
            let env = ProcessInfo.processInfo.environment
            let base = env["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
                ?? (env["HOME"] ?? NSHomeDirectory()) + "/.cache"
            return base + "/SDWebImage"
        }
        set {
            directoryLock.lock()
            customDirectory = newValue
            directoryLock.unlock()
        }
    }

    /// A cache in `<diskCacheDirectory or the default>/<namespace>`. Expired
    /// files are swept in the background at start.
    public init(namespace: String = "default", diskCacheDirectory: String? = nil,
                config: SDImageCacheConfig? = .default) {
        let config = (config ?? .default).copy()
        self.config = config
        let safe = namespace.replacingOccurrences(of: "/", with: "_")
        diskCachePath = (diskCacheDirectory ?? Self.defaultDiskCacheDirectory!) + "/" + (safe.isEmpty ? "default" : safe)
        memoryCache = (config.memoryCacheClass ?? SDMemoryCache.self).init(config: config)
        do {
            diskCache = try (config.diskCacheClass ?? DiskCache.self).init(cachePath: diskCachePath)
            diskError = nil
        } catch {
            diskCache = nil
            diskError = error
        }
        config.onChange = { [weak self] in
            guard let self else { return }
            self.memoryCache.configDidChange(self.config)
        }
        deleteOldFiles(completion: nil)
    }

    // MARK: - Store

    /// Memory and (by default) disk; without data the image is encoded (PNG
    /// with alpha, JPEG otherwise). `completion` runs when the disk write is done.
    public func store(_ image: SDImage?, imageData: Data? = nil, forKey key: String?, toDisk: Bool = true,
                      completion: (@Sendable () -> Void)? = nil) {
        store(image, imageData: imageData, forKey: key, cacheType: toDisk ? .all : .memory) { _ in completion?() }
    }

    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: nil, completion: completion)
    }

    /// Store with extended data kept beside the bytes (e.g. HTTP validators).
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        let queue = config.callbackQueue
        guard let key, image != nil || imageData != nil else {
            if let completion { queue.async { completion(nil) } }
            return
        }
        if cacheType.includesMemory, let image { storeImage(toMemory: image, forKey: key) }
        guard cacheType.includesDisk else {
            if let completion { queue.async { completion(nil) } }
            return
        }
        // Encoding waits for the disk queue; the bytes are readable meanwhile
        // only when we have them already.
        let gen = imageData.map { setPending(key, $0) }
        ioQueue.async { [self] in
            var error: (any Error)?
            if let data = imageData ?? image?.sd_imageData(as: .undefined, compressionQuality: 0.9) {
                do { try writeToDisk(data, key, extendedData) } catch let e { error = e }
            } else {
                error = SDWebImageError(.badImageData, "the image could not be encoded")
            }
            if let gen { clearPending(key, gen) }
            let result = error
            if let completion { queue.async { completion(result) } }
        }
    }

    public func storeImage(toMemory image: SDImage?, forKey key: String?) {
        guard let image, let key, config.shouldCacheImagesInMemory else { return }
        memoryCache.setObject(image, forKey: key, cost: image.cost)
        if config.shouldUseWeakMemoryCache { weakImages.set(image, forKey: key) }
    }

    /// Write bytes to disk now, on the calling thread.
    public func storeImageData(toDisk data: Data?, forKey key: String?) throws {
        guard let data, let key else { return }
        try ioQueue.sync { try writeToDisk(data, key, nil) }
    }

    private func writeToDisk(_ data: Data, _ key: String, _ extended: Data?) throws {
        guard let disk else { throw diskError ?? DiskCacheError(code: EIO, operation: "open", path: diskCachePath) }
        try disk.setData(data, forKey: key, extendedData: extended)
        sweeper.didWrite(data.count, to: disk, policy: config.sweepPolicy)
    }

    private func setPending(_ key: String, _ value: Data?) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        generation += 1
        pending[key] = (generation, value)
        return generation
    }

    private func clearPending(_ key: String, _ gen: UInt64) {
        lock.lock()
        // only our own entry: a newer write or removal may have replaced it
        if pending[key]?.generation == gen { pending.removeValue(forKey: key) }
        lock.unlock()
    }

    private func pendingData(_ key: String) -> Data?? {
        lock.lock()
        defer { lock.unlock() }
        return pending[key].map { $0.data }
    }

    // MARK: - Read

    public func imageFromMemoryCache(forKey key: String?) -> SDImage? {
        guard let key else { return nil }
        if let image = memoryCache.object(forKey: key) { return image }
        // evicted, but maybe alive elsewhere: back into the LRU
        guard config.shouldUseWeakMemoryCache, let image = weakImages.value(forKey: key) else { return nil }
        memoryCache.setObject(image, forKey: key, cost: image.cost)
        return image
    }

    /// Read and decode now (and keep the image in memory).
    public func imageFromDiskCache(forKey key: String?, options: SDImageCacheOptions = [],
                                   context: SDWebImageContext? = nil) -> SDImage? {
        guard let key, let data = diskImageData(forKey: key) else { return nil }
        let request = SDImageLoadRequest.resolve(context)
        let image = decode(data, key, options, request)
        if let image, let memoryKey = request.memoryKey(forDiskHitAt: key) { storeImage(toMemory: image, forKey: memoryKey) }
        return image
    }

    /// Memory first, then disk.
    public func imageFromCache(forKey key: String?) -> SDImage? {
        imageFromMemoryCache(forKey: key) ?? imageFromDiskCache(forKey: key)
    }

    /// The stored bytes (nil on a miss); refreshes the entry's access date.
    public func diskImageData(forKey key: String?) -> Data? {
        guard let key else { return nil }
        if let p = pendingData(key) { return p }
        return disk?.data(forKey: key)
    }

    public func diskImageDataExists(withKey key: String?) -> Bool {
        guard let key else { return false }
        if let p = pendingData(key) { return p != nil }
        return disk?.containsData(forKey: key) ?? false
    }

    public func diskImageExists(withKey key: String?, completion: @escaping @Sendable (Bool) -> Void) {
        let queue = config.callbackQueue
        readQueue.async { [self] in
            let exists = diskImageDataExists(withKey: key)
            queue.async { completion(exists) }
        }
    }

    /// Move the entries of an old cache folder (another version's, another
    /// location) into `dstPath` and remove the old folder, as SDWebImage's
    /// disk cache: nothing happens when `srcPath` does not exist; a missing
    /// `dstPath` is created by the move; an existing one gets the files merged
    /// in (moved files win); a file in the way of `dstPath` is replaced.
    public func moveCacheDirectory(fromPath srcPath: String, toPath dstPath: String) throws {
        try ioQueue.sync { try DiskCache.moveDirectory(from: srcPath, to: dstPath) }
    }

    /// Extended data stored with the entry (e.g. ETag and Last-Modified).
    public func extendedData(forKey key: String?) -> Data? {
        guard let key else { return nil }
        return ioQueue.sync { disk?.extendedData(forKey: key) }
    }

    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {
        guard let key else { return }
        try ioQueue.sync {
            guard let disk else { throw diskError ?? DiskCacheError(code: EIO, operation: "open", path: diskCachePath) }
            try disk.setExtendedData(data, forKey: key)
        }
    }

    /// Make a disk entry new again (a 304 from the server says it is current).
    public func touchDiskEntry(forKey key: String?) {
        guard let key else { return }
        ioQueue.async { [self] in disk?.touch(forKey: key) }
    }

    private func decode(_ data: Data, _ key: String, _ options: SDImageCacheOptions, _ request: SDImageLoadRequest) -> SDImage? {
        let o = request.coderOptions(key: key, scaleDown: options.contains(.scaleDownLargeImages),
                                     avoidDecode: false, progressive: false, queue: nil)
        let decoded = data.withUnsafeBytes { try? ImageDecoder.decode($0, options: o.decode) }
        // A file that ends early (a crash or power loss mid-write, a disk
        // error) decodes full-size with its tail grey; it is not a hit.
        // The caller fetches again and the new store replaces it.
        guard let decoded, decoded.isComplete else { return nil }
        return SDImage(decoded: decoded, scale: o.scaleFactor)
    }

    /// Query memory, then disk. Returns nil when it answered at once (a memory
    /// hit without data wanted, a sync query, no key); otherwise a token that
    /// cancels the pending disk part.
    @discardableResult
    public func queryCacheOperation(forKey key: String?, options: SDImageCacheOptions = [],
                                    context: SDWebImageContext? = nil, cacheType: SDImageCacheType = .all,
                                    done: SDImageCacheQueryCompletionBlock?) -> SDImageCacheToken? {
        guard let key, cacheType != .none else {
            done?(nil, nil, .none)
            return nil
        }
        let image = cacheType.includesMemory ? imageFromMemoryCache(forKey: key) : nil
        if let image, !options.contains(.queryMemoryData) && !options.contains(.queryMemoryDataSync) {
            done?(image, nil, .memory)
            return nil
        }
        if cacheType == .memory {
            done?(image, nil, image == nil ? .none : .memory)
            return nil
        }
        // not before: a memory hit answers inline and needs no queue
        let queue = context?.callbackQueue ?? SDCallbackQueue(dispatchQueue: config.callbackQueue, policy: .dispatch)
        let token = SDImageCacheToken(key: key, done: done)
        let sync = image != nil ? options.contains(.queryMemoryDataSync) : options.contains(.queryDiskDataSync)
        let work: @Sendable () -> Void = { [self] in
            if token.isCancelled { return }
            let data = diskImageData(forKey: key)
            if let image {
                token.finish(image, data, .memory, on: sync ? nil : queue)
                return
            }
            guard let data else {
                token.finish(nil, nil, .none, on: sync ? nil : queue)
                return
            }
            if options.contains(.avoidDecodeImage) {
                token.finish(nil, data, .disk, on: sync ? nil : queue)
                return
            }
            let request = SDImageLoadRequest.resolve(context)
            let decoded = decode(data, key, options, request)
            // a context that stores elsewhere than memory keeps the hit out of
            // it (as SDWebImage); a thumbnail made from a full-size entry goes
            // under its own key, never the full-size one
            if let decoded, cacheType.includesMemory, request.storeCacheType.includesMemory,
               let memoryKey = request.memoryKey(forDiskHitAt: key) {
                storeImage(toMemory: decoded, forKey: memoryKey)
            }
            token.finish(decoded, data, decoded == nil ? .none : .disk, on: sync ? nil : queue)
        }
        if sync { work() } else { readQueue.async(execute: work) }
        return token
    }

    public func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                           cacheType: SDImageCacheType, completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        queryCacheOperation(forKey: key, options: options.cacheOptions, context: context, cacheType: cacheType,
                            done: completion)
    }

    // MARK: - Remove

    public func removeImage(forKey key: String?, fromDisk: Bool = true, completion: (@Sendable () -> Void)? = nil) {
        removeImage(forKey: key, cacheType: fromDisk ? .all : .memory, completion: completion)
    }

    public func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        let queue = config.callbackQueue
        guard let key else {
            if let completion { queue.async(execute: completion) }
            return
        }
        if cacheType.includesMemory { removeImageFromMemory(forKey: key) }
        guard cacheType.includesDisk else {
            if let completion { queue.async(execute: completion) }
            return
        }
        let gen = setPending(key, nil)
        ioQueue.async { [self] in
            disk?.removeData(forKey: key)
            clearPending(key, gen)
            if let completion { queue.async(execute: completion) }
        }
    }

    public func removeImageFromMemory(forKey key: String?) {
        guard let key else { return }
        memoryCache.removeObject(forKey: key)
        weakImages.remove(forKey: key)
    }

    /// Synchronously.
    public func removeImageFromDisk(forKey key: String?) {
        guard let key else { return }
        ioQueue.sync { disk?.removeData(forKey: key) }
    }

    public func clearMemory() {
        memoryCache.removeAllObjects()
        weakImages.removeAll()
    }

    public func clearDisk(completion: (@Sendable () -> Void)? = nil) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            disk?.removeAllData()
            sweeper.cleared()
            if let completion { queue.async(execute: completion) }
        }
    }

    /// Expiry and size sweep (`maxDiskAge`, `maxDiskSize`, `diskCacheExpireType`).
    public func deleteOldFiles(completion: (@Sendable () -> Void)? = nil) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            if let disk { sweeper.sweep(disk, policy: config.sweepPolicy) }
            if let completion { queue.async(execute: completion) }
        }
    }

    public func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                              completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        if cacheType.includesMemory, imageFromMemoryCache(forKey: key) != nil {
            completion(.memory)
            return
        }
        guard cacheType.includesDisk else {
            completion(.none)
            return
        }
        diskImageExists(withKey: key) { completion($0 ? .disk : .none) }
    }

    public func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.includesMemory { clearMemory() }
        if cacheType.includesDisk { clearDisk(completion: completion) } else if let completion {
            config.callbackQueue.async(execute: completion)
        }
    }

    // MARK: - Info

    /// Bytes of decoded pixels held in memory, and how many images.
    public var memoryCost: Int { memoryCache.totalCost }
    public var memoryCount: Int { memoryCache.totalCount }

    /// Bytes on disk (allocated), synchronously.
    public func totalDiskSize() -> Int { ioQueue.sync { disk?.totalSize() ?? 0 } }
    public func totalDiskCount() -> Int { ioQueue.sync { disk?.totalCount() ?? 0 } }

    public func calculateSize(completion: @escaping @Sendable (_ fileCount: Int, _ totalSize: Int) -> Void) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            let entries = disk?.entries() ?? []
            let size = entries.reduce(0) { $0 + $1.bytes }
            queue.async { completion(entries.count, size) }
        }
    }

    /// The file that holds (or would hold) the key's bytes.
    public func cachePath(forKey key: String?) -> String? {
        guard let key else { return nil }
        return disk?.filePath(forKey: key) ?? diskCachePath + "/" + DiskCache.fileName(forKey: key)
    }

    /// Entries on disk, oldest access first (for tools such as `sdimage cache info`).
    public func diskEntries() -> [DiskCache.Entry] {
        ioQueue.sync { (disk?.entries() ?? []).sorted { $0.accessDate < $1.accessDate } }
    }

    /// Block until queued disk writes are done.
    public func waitForPendingWrites() { ioQueue.sync {} }
}

extension SDImageCache {
    public func image(forKey key: String?, options: SDImageCacheOptions = [], context: SDWebImageContext? = nil,
                      cacheType: SDImageCacheType = .all) async -> (image: SDImage?, data: Data?, cacheType: SDImageCacheType) {
        await withCheckedContinuation { c in
            var ctx = context ?? [:]
            ctx[.callbackQueue] = DispatchQueue.global()
            queryCacheOperation(forKey: key, options: options, context: ctx, cacheType: cacheType) { image, data, type in
                c.resume(returning: (image, data, type))
            }
        }
    }

    public func store(_ image: SDImage?, imageData: Data? = nil, forKey key: String?,
                      cacheType: SDImageCacheType = .all) async throws {
        let error: (any Error)? = await withCheckedContinuation { c in
            store(image, imageData: imageData, forKey: key, cacheType: cacheType) { c.resume(returning: $0) }
        }
        if let error { throw error }
    }

    public func clearDisk() async {
        await withCheckedContinuation { c in clearDisk { c.resume() } }
    }

    public func deleteOldFiles() async {
        await withCheckedContinuation { c in deleteOldFiles { c.resume() } }
    }

    /// Removes from memory and (after pending writes) from disk.
    public func removeImage(forKey key: String?, cacheType: SDImageCacheType) async {
        await withCheckedContinuation { c in removeImage(forKey: key, cacheType: cacheType) { c.resume() } }
    }

    /// Where the image is (`.memory`, `.disk`) or `.none`, without decoding.
    public func containsImage(forKey key: String?, cacheType: SDImageCacheType = .all) async -> SDImageCacheType {
        await withCheckedContinuation { c in containsImage(forKey: key, cacheType: cacheType) { c.resume(returning: $0) } }
    }

    /// The disk entries: how many, and their total size in bytes.
    public func calculateSize() async -> (fileCount: Int, totalSize: Int) {
        await withCheckedContinuation { c in calculateSize { c.resume(returning: ($0, $1)) } }
    }

    /// Whether the disk holds an entry for `key` (off the caller's thread;
    /// `diskImageDataExists(withKey:)` is the blocking form, and like every
    /// synchronous disk call it waits for nothing: writes still queued are
    /// seen through the pending-write table).
    public func diskImageExists(withKey key: String?) async -> Bool {
        await withCheckedContinuation { c in diskImageExists(withKey: key) { c.resume(returning: $0) } }
    }
}

/// Key → weak image, for `shouldUseWeakMemoryCache`. Dead entries are swept
/// now and then on insert, so the table stays about as big as what is alive.
final class WeakImageTable: @unchecked Sendable {
    private final class Box { weak var image: SDImage?; init(_ i: SDImage) { image = i } }
    private let lock = NSLock()
    private var table: [String: Box] = [:]
    private var sweepAt = 64

    func set(_ image: SDImage, forKey key: String) {
        lock.lock()
        table[key] = Box(image)
        if table.count >= sweepAt {
            table = table.filter { $0.value.image != nil }
            sweepAt = max(64, table.count * 2)
        }
        lock.unlock()
    }

    func value(forKey key: String) -> SDImage? {
        lock.lock(); defer { lock.unlock() }
        return table[key]?.image
    }

    func remove(forKey key: String) { lock.lock(); table[key] = nil; lock.unlock() }
    func removeAll() { lock.lock(); table = [:]; lock.unlock() }
}
