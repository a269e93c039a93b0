import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// Everything a manager load reported.
final class LoadLog: @unchecked Sendable {
    struct Call { let image: SDImage?; let data: Data?; let error: (any Error)?; let type: SDImageCacheType; let finished: Bool; let url: URL? }
    private let lock = NSLock()
    private var _calls: [Call] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let expected: Int

    init(finals: Int = 1) { expected = finals }

    var block: SDInternalCompletionBlock {
        { image, data, error, type, finished, url in
            self.lock.lock()
            self._calls.append(Call(image: image, data: data, error: error, type: type, finished: finished, url: url))
            let done = self._calls.filter(\.finished).count >= self.expected
            let w = done ? self.waiters : []
            if done { self.waiters = [] }
            self.lock.unlock()
            for c in w { c.resume() }
        }
    }

    func wait() async {
        await withCheckedContinuation { c in
            lock.lock()
            if _calls.filter(\.finished).count >= expected { lock.unlock(); c.resume(); return }
            waiters.append(c)
            lock.unlock()
        }
    }

    var calls: [Call] { lock.lock(); defer { lock.unlock() }; return _calls }
    var finals: [Call] { calls.filter(\.finished) }
    var last: Call? { finals.last }
    var sdError: SDWebImageError? { last?.error as? SDWebImageError }
}

extension SDWebImageManager {
    func load(_ url: URL?, _ options: SDWebImageOptions = [], _ context: SDWebImageContext? = nil, finals: Int = 1) async -> LoadLog {
        let log = LoadLog(finals: finals)
        loadImage(with: url, options: options, context: context, completed: log.block)
        await log.wait()
        return log
    }
}

func makeManager(_ cache: SDImageCache? = nil) -> (SDWebImageManager, SDImageCache) {
    let c = cache ?? makeCache()
    return (SDWebImageManager(cache: c, loader: patientDownloader()), c)
}

@Suite("SDWebImageManager (ports of SDWebImageManagerTests)", .serialized)
struct ManagerTests {
    let servers = TestServers.shared

    @Test("Network, then memory, then disk; URL echoed; operations and isRunning")
    func cacheThenNetwork() async throws {
        let s = try #require(servers, "test servers could not start")
        let (m, c) = makeManager()
        #expect(m !== SDWebImageManager.shared)  // patience: identity only
        let url = s.url(s.http, "/img/small.jpg?m1")
        let log = LoadLog()
        let op = m.loadImage(with: url, completed: log.block)  // isRunning while loading: see operations()
        await log.wait()
        // let go once over (right after the completion returned: inside it
        // the loader's operation is still there, as in SDWebImage)
        #expect(await eventually { op?.loaderOperation == nil && op?.cacheOperation == nil })
        let first = try #require(log.last)
        #expect(first.image?.width == 64 && first.error == nil && first.type == SDImageCacheType.none && first.url == url)
        #expect(first.data?.count ?? 0 > 0)
        #expect(await eventually { !m.isRunning })
        c.waitForPendingWrites()
        #expect(await m.load(url).last?.type == .memory)
        c.clearMemory()
        let disk = await m.load(url)
        #expect(disk.last?.type == .disk && disk.last?.image?.width == 64)
        #expect(m.cacheKey(for: url) == url.absoluteString)
    }

    @Test("While downloading, the operation holds the loader's operation; cancel reaches it")
    func operations() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let log = LoadLog()
        let op = try #require(m.loadImage(with: s.url(s.fault, "/stall?ops"), completed: log.block))
        #expect(await eventually { op.loaderOperation != nil })
        #expect(m.isRunning && !op.isCancelled)
        op.cancel()
        await log.wait()
        #expect(log.sdError?.code == .cancelled && op.isCancelled && op.loaderOperation == nil)
    }

    @Test("Errors: nil URL, 404 (not blocklisted), bad data (blocklisted until retryFailed or removal)")
    func errorsAndBlocklist() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        #expect(await m.load(nil).sdError?.code == .invalidURL)
        let missing = s.url(s.http, "/img/none.jpg?m2")
        let notFound = await m.load(missing)
        #expect(notFound.last?.image == nil && notFound.sdError?.code == .invalidDownloadStatusCode && notFound.last?.url == missing)
        #expect(!m.isFailedURL(missing))

        let html = s.url(s.fault, "/html?m2")
        #expect(await m.load(html).sdError?.code == .badImageData)
        #expect(m.isFailedURL(html))
        #expect(await m.load(html).sdError?.code == .blackListed)
        #expect(await m.load(html, .retryFailed).sdError?.code == .badImageData)
        m.removeFailedURL(html)
        #expect(!m.isFailedURL(html))
        _ = await m.load(html)
        m.removeAllFailedURLs()
        #expect(!m.isFailedURL(html))

        let refused = URL(string: "http://127.0.0.1:\(try closedPort())/x.jpg")!
        #expect(await m.load(refused).last?.error is URLError)
        #expect(!m.isFailedURL(refused))  // transient network trouble never blocks
    }

    @Test("cancelAll and cancelling one load complete with cancelled, once")
    func cancelling() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let a = LoadLog(), b = LoadLog()
        m.loadImage(with: s.url(s.fault, "/stall?m3a"), completed: a.block)
        let op = m.loadImage(with: s.url(s.fault, "/stall?m3b"), completed: b.block)
        try await Task.sleep(nanoseconds: 50_000_000)
        op?.cancel()
        await b.wait()
        #expect(b.sdError?.code == .cancelled && op?.isCancelled == true)
        m.cancelAll()
        await a.wait()
        #expect(a.sdError?.code == .cancelled)
        #expect(await eventually { !m.isRunning })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(a.finals.count == 1 && b.finals.count == 1)
    }

    @Test("Inside the completion the loader's operation is readable; while downloading the finished query is gone (issue 19)")
    func operationsInCompletion() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let url = s.url(s.fault, "/drip?ops")
        let box = OpBox()
        let seen = Recorder()
        let done = DispatchSemaphore(value: 0)
        box.op = m.loadImage(with: url) { image, _, _, _, finished, _ in
            guard finished else { return }
            let token = box.op?.loaderOperation as? SDWebImageDownloadToken
            seen.add(token == nil ? "no loader" : "loader")
            seen.add(token?.response == nil ? "no response" : "response")
            seen.add(image == nil ? "no image" : "image")
            done.signal()
        }
        await offPool { done.wait() }
        #expect(seen.items == ["loader", "response", "image"])
        #expect(await eventually { box.op?.loaderOperation == nil })
        // while a download runs (one that stalls, so a starved poller cannot
        // miss the window): the loader's operation is there, the query gone
        let stalled = m.loadImage(with: s.url(s.fault, "/stall?ops-in-completion")) { _, _, _, _, _, _ in }
        #expect(await eventually(30) { stalled?.loaderOperation != nil })
        #expect(stalled?.cacheOperation == nil)  // the query answered (a miss) before the download
        stalled?.cancel()
    }

    @Test("refreshCached: cached image first; a real 304 keeps the entry and makes it new; a changed image comes second")
    func refreshCached() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let file = s.www.appendingPathComponent("img/refresh.jpg")
        try TestServers.jpeg(width: 30, height: 20, progressive: false).write(to: file)
        let url = s.url(s.http, "/img/refresh.jpg")
        _ = await m.load(url, .waitStoreCache)
        #expect(c.extendedData(forKey: url.absoluteString) != nil)  // ETag and Last-Modified kept
        // age the entry, then revalidate: 304
        let path = try #require(c.cachePath(forKey: url.absoluteString))
        var old = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        utimensat(AT_FDCWD, path, &old, 0)
        let same = await m.load(url, .refreshCached)
        #expect(same.last?.type == .memory && same.last?.image?.width == 30)
        #expect(await eventually { !m.isRunning })
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(same.finals.count == 1)  // 304: no second call
        c.waitForPendingWrites()  // the touch is queued on the cache's I/O queue
        var st = stat()
        stat(path, &st)
        #expect(st.st_mtim.tv_sec > time(nil) - 60)  // made new again

        // the image changes on the server (new ETag): completion comes twice
        try TestServers.jpeg(width: 33, height: 22, progressive: false).write(to: file)
        let changed = await m.load(url, .refreshCached, finals: 2)
        #expect(changed.finals.count == 2)
        #expect(changed.finals.first?.image?.width == 30 && changed.finals.last?.image?.width == 33)
        #expect(changed.finals.last?.type == SDImageCacheType.none)
        c.waitForPendingWrites()
        #expect(c.imageFromMemoryCache(forKey: url.absoluteString)?.width == 33)
    }

    @Test("refreshCached honours max-age: a fresh entry needs no request; a stale one is revalidated; a 304 renews it")
    func refreshHonoursMaxAge() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let dir = s.www.appendingPathComponent("fresh")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("a.jpg")
        try TestServers.jpeg(width: 20, height: 10, progressive: false).write(to: file)
        let url = s.url(s.http, "/fresh/a.jpg")  // nginx: Cache-Control: max-age=3600
        let key = url.absoluteString
        func validators() throws -> SDWebImageHTTPValidators {
            try JSONDecoder().decode(SDWebImageHTTPValidators.self, from: #require(c.extendedData(forKey: key)))
        }
        func makeStale() throws {
            var v = try validators()
            v.freshUntil = Date(timeIntervalSinceNow: -1)
            try c.storeExtendedData(JSONEncoder().encode(v), forKey: key)
        }
        _ = await m.load(url, .waitStoreCache)
        let first = try validators()
        #expect(first.etag != nil && (first.freshUntil ?? .distantPast) > Date(timeIntervalSinceNow: 3500))

        // the server's copy changes, but the entry is fresh: served as it is, no request
        try TestServers.jpeg(width: 21, height: 10, progressive: false).write(to: file)
        let fresh = await m.load(url, .refreshCached)
        #expect(fresh.last?.image?.width == 20)
        #expect(await eventually { !m.isRunning })
        #expect(fresh.finals.count == 1)

        // stale: revalidated, and the changed image comes second
        try makeStale()
        let changed = await m.load(url, .refreshCached, finals: 2)
        #expect(changed.finals.first?.image?.width == 20 && changed.finals.last?.image?.width == 21)
        #expect(await eventually { !m.isRunning })
        c.waitForPendingWrites()

        // stale again, unchanged on the server: a 304, whose max-age makes it fresh again
        try makeStale()
        let same = await m.load(url, .refreshCached)
        #expect(same.last?.image?.width == 21)
        #expect(await eventually { !m.isRunning })
        #expect(same.finals.count == 1)
        #expect((try validators().freshUntil ?? .distantPast) > Date(timeIntervalSinceNow: 3500))
    }

    @Test("refreshCached revalidates through any cache that keeps extended data, not only SDImageCache")
    func refreshCachedCustomCache() async throws {
        let s = try #require(servers)
        let cache = DictionaryCache()
        let m = SDWebImageManager(cache: cache, loader: patientDownloader())
        let file = s.www.appendingPathComponent("img/refresh-custom.jpg")
        try TestServers.jpeg(width: 26, height: 18, progressive: false).write(to: file)
        let url = s.url(s.http, "/img/refresh-custom.jpg")
        let first = await m.load(url, .waitStoreCache)
        #expect(first.last?.image?.width == 26)
        let raw = try #require(cache.extendedData(forKey: url.absoluteString))
        #expect(String(decoding: raw, as: UTF8.self).contains("etag"))  // the validators, as stored
        let same = await m.load(url, .refreshCached)
        #expect(same.last?.image?.width == 26)
        #expect(await eventually { cache.touches.value == 1 })  // a 304 made the entry new again
        #expect(await eventually { !m.isRunning })
        #expect(same.finals.count == 1)
        // this cache answers inside queryImage: the load ends before the
        // manager gets the query's operation back, which it must not keep
        let log = LoadLog()
        let op = m.loadImage(with: url, completed: log.block)
        await log.wait()
        #expect(log.last?.type == .memory && op?.cacheOperation == nil && op?.loaderOperation == nil)
    }

    @Test("A truncated disk entry is fetched again and replaced")
    func truncatedEntryRefetched() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let url = s.url(s.http, "/img/big.jpg?truncated")
        let whole = try Data(contentsOf: s.www.appendingPathComponent("img/big.jpg"))
        try c.storeImageData(toDisk: whole.prefix(whole.count * 2 / 3), forKey: url.absoluteString)  // header whole, pixels cut
        let log = await m.load(url, .waitStoreCache)
        #expect(log.last?.image != nil && log.last?.type == SDImageCacheType.none)  // from the network
        #expect(c.diskImageData(forKey: url.absoluteString) == whole)
    }

    @Test("fromCacheOnly, fromLoaderOnly, waitStoreCache, query and store cache types")
    func cacheOptions() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let url = s.url(s.http, "/img/n4.jpg?m5")
        let miss = await m.load(url, .fromCacheOnly)
        #expect(miss.last?.image == nil && miss.last?.error == nil && miss.last?.type == SDImageCacheType.none)
        let stored = await m.load(url, .waitStoreCache, [.storeCacheType: SDImageCacheType.disk])
        #expect(stored.last?.image != nil)
        #expect(c.diskImageDataExists(withKey: url.absoluteString))  // already on disk when called back
        #expect(c.imageFromMemoryCache(forKey: url.absoluteString) == nil)
        let memOnly = await m.load(url, .fromCacheOnly, [.queryCacheType: SDImageCacheType.memory])
        #expect(memOnly.last?.image == nil)
        let diskOnly = await m.load(url, .fromCacheOnly, [.queryCacheType: SDImageCacheType.disk])
        #expect(diskOnly.last?.type == .disk && diskOnly.last?.image != nil)
        let fresh = await m.load(url, [.fromLoaderOnly])
        #expect(fresh.last?.type == SDImageCacheType.none && fresh.last?.image != nil)
    }

    @Test("Cache key filter, serializer and options processor")
    func hooks() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        m.cacheKeyFilter = SDWebImageCacheKeyFilter { "custom-" + $0.lastPathComponent }
        let url = s.url(s.http, "/img/n5.jpg")
        _ = await m.load(url, [], [.storeCacheType: SDImageCacheType.memory])
        #expect(c.imageFromMemoryCache(forKey: "custom-n5.jpg") != nil && m.cacheKey(for: url) == "custom-n5.jpg")
        m.cacheKeyFilter = nil

        m.cacheSerializer = SDWebImageCacheSerializer { image, _, _ in image.pngData() }
        let url2 = s.url(s.http, "/img/n6.jpg?serialized")
        _ = await m.load(url2, .waitStoreCache)
        #expect(SDImageFormat(data: c.diskImageData(forKey: url2.absoluteString)) == .png)
        m.cacheSerializer = nil

        m.optionsProcessor = SDWebImageOptionsProcessor { _, options, context in
            var ctx = context ?? [:]
            ctx[.imageScaleFactor] = 3.0
            return SDWebImageOptionsResult(options: options.union(.fromLoaderOnly), context: ctx)
        }
        let scaled = await m.load(s.url(s.http, "/img/n7.jpg?processed"))
        #expect(scaled.last?.image?.scale == 3)
    }

    @Test("Thumbnails: own keys; built from the full-size disk entry without network; ten sizes from one URL")
    func thumbnails() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let url = s.url(s.http, "/img/big.jpg?m7")
        _ = await m.load(url, .waitStoreCache)
        let full = try #require(c.diskImageData(forKey: url.absoluteString))
        c.clearMemory()
        let thumbContext: SDWebImageContext = [.imageThumbnailPixelSize: CGSize(width: 100, height: 100)]
        let thumb = await m.load(url, [.fromCacheOnly, .waitStoreCache], thumbContext)
        #expect(thumb.last?.image?.width == 100 && thumb.last?.image?.height == 75)
        #expect(thumb.last?.type == .disk && thumb.last?.data == nil)
        let key = try #require(m.cacheKey(for: url, context: thumbContext))
        #expect(key != url.absoluteString && key.contains("Thumbnail({100.000000,100.000000},1)"))
        #expect(c.imageFromMemoryCache(forKey: key)?.width == 100 && c.diskImageDataExists(withKey: key))
        #expect(c.diskImageData(forKey: url.absoluteString) == full)  // full-size bytes untouched

        let url2 = s.url(s.http, "/img/big.jpg?m7b")
        let logs = (490...499).map { size -> LoadLog in
            let log = LoadLog()
            m.loadImage(with: url2, context: [.imageThumbnailPixelSize: CGSize(width: size, height: size)], completed: log.block)
            return log
        }
        for (log, size) in zip(logs, 490...499) {
            await log.wait()
            #expect(log.last?.image?.width == size, "\(size)")
        }
    }

    @Test("scaleDownLargeImages bounds the bitmap; progressive previews arrive unfinished")
    func scaleDownAndProgressive() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let limited = await m.load(s.url(s.http, "/img/big.jpg?m8"), .scaleDownLargeImages,
                                   [.imageScaleDownLimitBytes: 1_000_000])
        let image = try #require(limited.last?.image)
        #expect(image.cost <= 1_000_000 && image.width < 1000)
        let patient = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        let held = HeldDrip(s, tag: "m8")
        defer { held.open() }
        let prog = LoadLog()
        patient.loadImage(with: held.url, options: .progressiveLoad, context: nil, completed: prog.block)
        #expect(await eventually(600) { prog.calls.contains { !$0.finished } }, "a preview before the last piece")
        held.open()
        await prog.wait()
        let previews = prog.calls.filter { !$0.finished }
        #expect(!previews.isEmpty && previews.allSatisfy { $0.image?.isIncremental == true })
        #expect(prog.last?.image?.isIncremental == false)
    }

    @Test("A custom loader and cache through the context; async/await")
    func customLoaderAndAsync() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let other = makeCache("other")
        let loader = PNGLoader()
        let log = await m.load(URL(string: "memory://x.png"), .waitStoreCache,
                               [.imageLoader: loader, .imageCache: other])
        #expect(log.last?.image?.width == 3 && log.last?.data != nil)
        #expect(other.diskImageDataExists(withKey: "memory://x.png"))

        let r = try await m.loadImage(with: s.url(s.http, "/img/n1.jpg?async"))
        #expect(r.image?.width == 17 && r.cacheType == SDImageCacheType.none)
        let again = try await m.loadImage(with: s.url(s.http, "/img/n1.jpg?async"))
        #expect(again.cacheType == .memory)
        await #expect(throws: SDWebImageError.self) { try await m.loadImage(with: nil) }
    }
}

/// An SDImageCache that counts the queries it is asked.
final class CountingCache: SDImageCacheProtocol, @unchecked Sendable {
    let inner: SDImageCache
    let queries = Counter()
    /// Answers whose completion has returned (the manager answers every
    /// waiter of a shared query inside it).
    let answered = Counter()
    /// Answers pass through this queue: suspend it to hold them back.
    let gate = DispatchQueue(label: "CountingCache.gate")
    init(_ inner: SDImageCache) { self.inner = inner }
    func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?, cacheType: SDImageCacheType,
                    completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        queries.add()
        let gate = self.gate
        return inner.queryImage(forKey: key, options: options, context: context, cacheType: cacheType) { i, d, t in
            gate.async { completion?(i, d, t); self.answered.add() }
        }
    }
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               completion: (@Sendable ((any Error)?) -> Void)?) {
        inner.store(image, imageData: imageData, forKey: key, cacheType: cacheType, completion: completion)
    }
    func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.removeImage(forKey: key, cacheType: cacheType, completion: completion)
    }
    func containsImage(forKey key: String?, cacheType: SDImageCacheType, completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        inner.containsImage(forKey: key, cacheType: cacheType, completion: completion)
    }
    func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.clear(with: cacheType, completion: completion)
    }
}

/// A cache of our own (a locked dictionary) with the revalidation hooks.
final class DictionaryCache: SDImageCacheProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String: (image: SDImage?, data: Data?, extended: Data?)] = [:]
    let touches = Counter()

    func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?, cacheType: SDImageCacheType,
                    completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        lock.lock()
        let e = key.flatMap { entries[$0] }
        lock.unlock()
        completion?(e?.image, e?.data, e == nil ? .none : .memory)
        return nil
    }
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: nil, completion: completion)
    }
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        if let key { lock.lock(); entries[key] = (image, imageData, extendedData); lock.unlock() }
        completion?(nil)
    }
    func extendedData(forKey key: String?) -> Data? {
        lock.lock(); defer { lock.unlock() }
        return key.flatMap { entries[$0]?.extended }
    }
    func touchDiskEntry(forKey key: String?) { touches.add() }
    func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        if let key { lock.lock(); entries[key] = nil; lock.unlock() }
        completion?()
    }
    func containsImage(forKey key: String?, cacheType: SDImageCacheType, completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        lock.lock(); let hit = key.flatMap { entries[$0] } != nil; lock.unlock()
        completion(hit ? .memory : .none)
    }
    func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        lock.lock(); entries = [:]; lock.unlock()
        completion?()
    }
}

/// Refuses downloads and never blocks URLs.
final class Policy: SDWebImageManagerDelegate, @unchecked Sendable {
    let allowDownloads: Bool
    init(allowDownloads: Bool) { self.allowDownloads = allowDownloads }
    func imageManager(_ manager: SDWebImageManager, shouldDownloadImageFor url: URL?) -> Bool { allowDownloads }
    func imageManager(_ manager: SDWebImageManager, shouldBlockFailedURL url: URL, error: any Error) -> Bool? { false }
}

/// A transformer that holds its load until `release` is signalled (or 30 s pass).
struct BlockingTransformer: SDImageTransformer {
    let release: DispatchSemaphore
    let started: DispatchSemaphore
    var transformerKey: String { "blocking" }
    func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        started.signal()
        _ = release.wait(timeout: .now() + 120)  // released by the test; the bound only ends a broken run
        return image
    }
}

@Suite("SDWebImageManager: shared queries, delegate", .serialized)
struct ManagerSharingTests {
    let servers = TestServers.shared

    @Test("A slow transformer holds up only its own load: another load's download completes meanwhile (issue 19)")
    func transformerDoesNotBlockOthers() async throws {
        let s = try #require(servers, "test servers could not start")
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let slow = LoadLog()
        m.loadImage(with: s.url(s.fault, "/ok?slow-\(UUID().uuidString)"),
                    context: [.imageTransformer: BlockingTransformer(release: release, started: started)],
                    completed: slow.block)
        // the transformer is running (on the shared callback queue, before
        // the fix, where every download's completion waited behind it)
        // waited for on a thread of its own: the transformer already holds a
        // pool thread, and a second one blocked here could leave none on 2 cores
        let running = await withCheckedContinuation { c in
            Thread { c.resume(returning: started.wait(timeout: .now() + 120) == .success) }.start()
        }
        #expect(running)
        let other = LoadLog()
        m.loadImage(with: s.url(s.fault, "/ok?other-\(UUID().uuidString)"), completed: other.block)
        await other.wait()  // before the transformer is released
        #expect(other.last?.image != nil)
        #expect(slow.finals.isEmpty)  // still transforming
        release.signal()
        await slow.wait()
        #expect(slow.last?.image != nil)
    }

    @Test("Identical concurrent loads share one cache query and one download; a waiter can leave")
    func sharing() async throws {
        let s = try #require(servers, "test servers could not start")
        let inner = makeCache()
        let counting = CountingCache(inner)
        let m = SDWebImageManager(cache: counting, loader: patientDownloader())
        // The download's last piece waits for the gate, opened once every
        // waiter has asked the downloader: a starved machine (TSan, a second
        // build) cannot finish it before the last one joins.
        let gate = "shared-\(UUID().uuidString)"
        defer { _ = s.faultGet("/open?gate=\(gate)") }
        let url = s.url(s.fault, "/drip-file?name=img/n1.jpg&piece=4096&gap=5&gate=\(gate)")
        let notes = NotificationLog(url: url)
        counting.gate.suspend()  // the (missing) answer waits until all have joined
        let logs = (0..<10).map { _ -> LoadLog in
            let log = LoadLog()
            m.loadImage(with: url, completed: log.block)
            return log
        }
        let leaving = LoadLog()
        m.loadImage(with: url, completed: leaving.block)?.cancel()
        await leaving.wait()
        counting.gate.resume()
        #expect(leaving.sdError?.code == .cancelled)
        // the answer went to every waiter, each of which asked the downloader
        #expect(await eventually(600) { counting.answered.value == 1 })
        _ = s.faultGet("/open?gate=\(gate)")
        for log in logs { await log.wait() }
        #expect(logs.allSatisfy { $0.last?.image != nil && $0.finals.count == 1 })
        #expect(counting.queries.value == 1)
        #expect(await eventually(600) { notes.count(.SDWebImageDownloadStop) == 1 })
        #expect(notes.count(.SDWebImageDownloadStart) == 1)

        // once answered, a new load queries again (here: a memory hit)
        #expect(await m.load(url).last?.type == .memory)
        #expect(counting.queries.value == 2)
    }

    @Test("The delegate can forbid downloads and overrule the blocklist")
    func delegate() async throws {
        let s = try #require(servers)
        let (m, _) = makeManager()
        let cacheOnly = Policy(allowDownloads: false)
        m.delegate = cacheOnly
        let miss = await m.load(s.url(s.http, "/img/n2.jpg?delegate"))
        #expect(miss.last?.image == nil && miss.last?.error == nil)
        let lenient = Policy(allowDownloads: true)
        m.delegate = lenient
        let html = s.url(s.fault, "/html?delegate")
        #expect(await m.load(html).sdError?.code == .badImageData)
        #expect(!m.isFailedURL(html))
    }
}

/// A loader that "downloads" a 3x2 PNG made in memory.
final class PNGLoader: SDImageLoader, @unchecked Sendable {
    func canRequestImage(for url: URL?) -> Bool { url?.scheme == "memory" }
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?, completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        let data = try? TestServers.png(width: 3, height: 2)
        let image = data.flatMap { SDImage(data: $0) }
        DispatchQueue.global().async { completed?(image, data, nil, true) }
        return nil
    }
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool { false }
}

final class OpBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _op: SDWebImageCombinedOperation?
    var op: SDWebImageCombinedOperation? {
        get { lock.lock(); defer { lock.unlock() }; return _op }
        set { lock.lock(); _op = newValue; lock.unlock() }
    }
}
