import Dispatch
import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import Testing

/// A cache in its own temporary folder.
func makeCache(_ name: String = "t", config: SDImageCacheConfig? = nil) -> SDImageCache {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdic-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    let c = config ?? SDImageCacheConfig()
    c.callbackQueue = DispatchQueue(label: "cache.callbacks")
    return SDImageCache(namespace: name, diskCacheDirectory: dir, config: c)
}

func testImage(_ w: Int = 40, _ h: Int = 30) throws -> (SDImage, Data) {
    let data = try TestServers.jpeg(width: w, height: h, progressive: false)
    return (try #require(SDImage(data: data)), data)
}

@Suite("SDImageCache (ports of SDImageCacheTests)")
struct ImageCacheTests {
    @Test("shared is a singleton; a new cache is another; default folder follows XDG")
    func instances() {
        #expect(SDImageCache.shared === SDImageCache.shared)
        let c = makeCache()
        #expect(c !== SDImageCache.shared)
        #expect(SDImageCache.shared.diskCachePath.hasSuffix("/SDWebImage/default"))
        #expect(c.totalDiskSize() == 0 && c.totalDiskCount() == 0)
    }

    @Test("Store: memory at once, disk after completion; toDisk false keeps it in memory only")
    func storing() async throws {
        let c = makeCache()
        let (image, data) = try testImage()
        await withCheckedContinuation { k in
            c.store(image, imageData: data, forKey: "k1") { k.resume() }
            #expect(c.imageFromMemoryCache(forKey: "k1") === image)  // synchronously
        }
        #expect(c.diskImageDataExists(withKey: "k1") && c.diskImageData(forKey: "k1") == data)
        #expect(c.totalDiskCount() == 1)
        c.store(image, imageData: data, forKey: "mem", toDisk: false)
        c.waitForPendingWrites()
        #expect(c.imageFromMemoryCache(forKey: "mem") != nil && !c.diskImageDataExists(withKey: "mem"))
        // without data: encoded, PNG for alpha, JPEG for opaque
        let alpha = try #require(SDImage(data: try TestServers.png(width: 8, height: 8)))
        try await c.store(alpha, forKey: "alpha")
        try await c.store(image, forKey: "opaque")
        #expect(SDImageFormat(data: c.diskImageData(forKey: "alpha")) == .png)
        #expect(SDImageFormat(data: c.diskImageData(forKey: "opaque")) == .jpeg)
        // bytes only
        try c.storeImageData(toDisk: data, forKey: "bytes")
        #expect(c.imageFromMemoryCache(forKey: "bytes") == nil)
        #expect(c.imageFromDiskCache(forKey: "bytes")?.width == 40)
        #expect(c.imageFromMemoryCache(forKey: "bytes") != nil)  // a disk read fills memory
    }

    @Test("clearMemory keeps disk, clearDisk keeps memory; removal from memory only or both")
    func clearing() async throws {
        let c = makeCache()
        let (image, data) = try testImage()
        try await c.store(image, imageData: data, forKey: "a")
        c.clearMemory()
        #expect(c.imageFromMemoryCache(forKey: "a") == nil && c.imageFromDiskCache(forKey: "a") != nil)
        await c.clearDisk()
        #expect(c.imageFromMemoryCache(forKey: "a") != nil && !c.diskImageDataExists(withKey: "a"))
        #expect(c.totalDiskCount() == 0)

        try await c.store(image, imageData: data, forKey: "b")
        await withCheckedContinuation { k in c.removeImage(forKey: "b", fromDisk: false) { k.resume() } }
        #expect(c.imageFromMemoryCache(forKey: "b") == nil && c.diskImageDataExists(withKey: "b"))
        await withCheckedContinuation { k in c.removeImage(forKey: "b", fromDisk: true) { k.resume() } }
        #expect(!c.diskImageDataExists(withKey: "b") && c.imageFromCache(forKey: "b") == nil)
        c.removeImage(forKey: "c")  // a removal is visible at once to readers
        #expect(!c.diskImageDataExists(withKey: "c"))
    }

    @Test("Queries: memory hit answers at once; disk hit through a token; query types; cancel calls done once, synchronously")
    func queries() async throws {
        let c = makeCache()
        let (image, data) = try testImage()
        try await c.store(image, imageData: data, forKey: "q")
        let sync = Box<(SDImage?, SDImageCacheType)>()
        let none = c.queryCacheOperation(forKey: "q") { i, _, t in sync.value = (i, t) }
        #expect(none == nil && sync.value?.0 === image && sync.value?.1 == .memory)
        c.clearMemory()
        let r = await c.image(forKey: "q")
        #expect(r.image?.width == 40 && r.data == data && r.cacheType == .disk)
        #expect(await c.image(forKey: "q", cacheType: .memory).cacheType == .memory)  // the disk read filled it
        c.clearMemory()
        #expect(await c.image(forKey: "q", cacheType: .memory).image == nil)
        #expect(await c.image(forKey: "missing").cacheType == .none)
        // sync disk query: the answer comes before the call returns
        let direct = Box<SDImageCacheType>()
        _ = c.queryCacheOperation(forKey: "q", options: .queryDiskDataSync) { _, _, t in direct.value = t }
        #expect(direct.value == .disk)
        // memory hit plus data
        let both = await c.image(forKey: "q", options: .queryMemoryData)
        #expect(both.image != nil && both.data == data && both.cacheType == .memory)

        c.clearMemory()
        let calls = Counter()
        c.config.callbackQueue.suspend()  // the disk answer is read but cannot be delivered yet
        let token = c.queryCacheOperation(forKey: "q") { image, _, type in
            calls.add()
            #expect(image == nil && type == .none)
        }
        try await Task.sleep(nanoseconds: 50_000_000)
        token?.cancel()
        c.config.callbackQueue.resume()
        token?.cancel()
        #expect(calls.value == 1)  // at once, on this thread
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(calls.value == 1)
    }

    @Test("A thumbnail query on a full-size entry decodes small and never writes under the full-size key")
    func thumbnailQuery() async throws {
        let c = makeCache()
        let (_, data) = try testImage(400, 300)
        try c.storeImageData(toDisk: data, forKey: "full")
        let r = await c.image(forKey: "full", context: [.imageThumbnailPixelSize: CGSize(width: 100, height: 100)])
        #expect(r.image?.width == 100 && r.image?.height == 75 && r.cacheType == .disk)
        #expect(c.imageFromMemoryCache(forKey: "full") == nil && c.diskImageData(forKey: "full") == data)
        // test17: kept in memory under the thumbnail's own key, so the next query is a memory hit
        let tkey = SDThumbnailedKeyForKey("full", CGSize(width: 100, height: 100), true)
        #expect(c.imageFromMemoryCache(forKey: tkey) === r.image)
        #expect(await c.image(forKey: tkey).cacheType == .memory)
    }

    @Test("An entry that ends early (crash or power loss mid-write) is a miss, not a half-grey hit")
    func truncatedEntryIsAMiss() async throws {
        let c = makeCache()
        let (_, data) = try testImage(64, 48)
        try c.storeImageData(toDisk: data.prefix(data.count * 2 / 3), forKey: "cut")
        #expect(c.imageFromDiskCache(forKey: "cut") == nil)
        let r = await c.image(forKey: "cut")
        #expect(r.image == nil && r.cacheType == .none)
        #expect(c.imageFromMemoryCache(forKey: "cut") == nil)
        try c.storeImageData(toDisk: data, forKey: "whole")  // the same bytes, whole: a hit
        #expect(c.imageFromDiskCache(forKey: "whole")?.width == 64)
    }

    @Test("A JPEG whose scan data is damaged, or an entry whose bytes rotted on disk, is a miss (issue 13, defect 5)")
    func damagedEntryIsAMiss() async throws {
        let c = makeCache()
        let jpeg = try TestServers.jpeg(width: 256, height: 192, progressive: false)
        let bytes = [UInt8](jpeg)
        let sos = try #require((0..<bytes.count - 1).last { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        var mid = sos + (bytes.count - sos) / 2
        while bytes[mid - 1] == 0xFF { mid += 1 }
        // cut inside the scan, an end marker appended: libjpeg calls it a warning
        try c.storeImageData(toDisk: Data(bytes[..<mid] + [0xFF, 0xD9]), forKey: "damaged")
        #expect(c.imageFromDiskCache(forKey: "damaged") == nil)
        #expect(await c.image(forKey: "damaged").image == nil)
        // one flipped bit on disk, checksum attribute kept: caught, removed
        try c.storeImageData(toDisk: jpeg, forKey: "rot")
        #expect(c.imageFromDiskCache(forKey: "rot")?.width == 256)
        c.clearMemory()
        let path = try #require(c.cachePath(forKey: "rot"))
        let fd = open(path, O_RDWR)
        var b: UInt8 = 0
        #expect(pread(fd, &b, 1, off_t(mid)) == 1)
        b ^= 0x10
        #expect(pwrite(fd, &b, 1, off_t(mid)) == 1)
        close(fd)
        #expect(c.imageFromDiskCache(forKey: "rot") == nil)
        #expect(!c.diskImageDataExists(withKey: "rot"))
    }

    @Test("decodeLimits cap every disk hit, whatever the query asks; SDImageCacheDecodeImageData takes them too")
    func decodeLimits() async throws {
        let config = SDImageCacheConfig()
        #expect(config.decodeLimits == DecodeLimits())
        config.decodeLimits = DecodeLimits(maxPixels: 100 * 80, maxDimension: 120, maxCodecMemory: 256 << 20)
        let c = makeCache(config: config)
        let (_, big) = try testImage(200, 150)  // 30,000 pixels
        let (_, wide) = try testImage(121, 10)  // few pixels, one side over
        let (_, fits) = try testImage(100, 80)  // at the caps
        try c.storeImageData(toDisk: big, forKey: "big")
        try c.storeImageData(toDisk: wide, forKey: "wide")
        try c.storeImageData(toDisk: fits, forKey: "fits")
        #expect(c.imageFromDiskCache(forKey: "big") == nil && c.imageFromDiskCache(forKey: "wide") == nil)
        #expect(await c.image(forKey: "big").image == nil)
        // a thumbnail, or a query asking for more, gets no further: the caps are on the source
        #expect(await c.image(forKey: "big", context: [.imageThumbnailPixelSize: CGSize(width: 50, height: 50)]).image == nil)
        var more = DecodeOptions()
        more.maxPixels = 1 << 28
        more.maxDimension = 1 << 16
        #expect(await c.image(forKey: "big", context: [.imageDecodeOptions: [SDImageCoderOption.decodeCoreOptions: more]]).image == nil)
        #expect(c.imageFromDiskCache(forKey: "fits")?.width == 100)
        #expect(c.diskImageData(forKey: "big") == big)  // refused, not damaged: the bytes stay
        // the same bytes under the default caps decode
        let open = makeCache()
        try open.storeImageData(toDisk: big, forKey: "big")
        #expect(open.imageFromDiskCache(forKey: "big")?.width == 200)
        #expect(SDImageCacheDecodeImageData(big, "big", [], nil)?.width == 200)
        #expect(SDImageCacheDecodeImageData(big, "big", [], nil, limits: config.decodeLimits) == nil)
        // a cache copies its config: changing it later does not loosen the cache
        config.decodeLimits = DecodeLimits()
        #expect(c.imageFromDiskCache(forKey: "big") == nil)
    }

    @Test("SDImageCache.decodedImage: the image a context asks for, or why not (the decoder's reason, a file that ends early, the limits)")
    func decodedImageOrWhy() throws {
        let jpeg = try TestServers.jpeg(width: 256, height: 192, progressive: false)
        let thumb = try SDImageCache.decodedImage(from: jpeg, forKey: "k",
                                                  context: [.imageThumbnailPixelSize: CGSize(width: 64, height: 64)])
        #expect(thumb.width == 64 && thumb.height == 48)
        #expect(SDImageCacheDecodeImageData(jpeg, "k", [], nil)?.width == 256)
        // where SDImageCacheDecodeImageData answers nil, the reason
        func why(_ data: Data, _ limits: DecodeLimits = DecodeLimits()) -> SDWebImageError? {
            do { _ = try SDImageCache.decodedImage(from: data, forKey: "k", limits: limits); return nil } catch { return error }
        }
        let cut = why(jpeg.prefix(jpeg.count * 2 / 3))
        #expect(cut?.code == .badImageData && cut?.message.contains("ends early") == true)
        let junk = why(Data("not an image at all".utf8))
        #expect(junk?.code == .badImageData)
        var small = DecodeLimits()
        small.maxPixels = 1000
        let big = why(jpeg, small)
        #expect(big?.code == .badImageData && (big?.underlyingError as? CoderError)?.code == .imageTooLarge)
    }

    @Test("Async variants: containsImage, diskImageExists, calculateSize, removeImage (issue 19)")
    func asyncVariants() async throws {
        let c = makeCache()
        let (image, data) = try testImage()
        try await c.store(image, imageData: data, forKey: "a")
        #expect(await c.containsImage(forKey: "a") == .memory)
        #expect(await c.containsImage(forKey: "a", cacheType: .disk) == .disk)
        #expect(await c.diskImageExists(withKey: "a"))
        let size = await c.calculateSize()
        #expect(size.fileCount == 1 && size.totalSize > 0)
        await c.removeImage(forKey: "a", cacheType: .all)
        #expect(await c.containsImage(forKey: "a") == SDImageCacheType.none)
        #expect(!(await c.diskImageExists(withKey: "a")))
    }

    @Test("Expiry: maxDiskAge 1 s; size limit evicts; cache paths follow the key's extension")
    func expiryAndPaths() async throws {
        let config = SDImageCacheConfig()
        config.maxDiskAge = 1
        let c = makeCache(config: config)
        let (image, data) = try testImage()
        try await c.store(image, imageData: data, forKey: "old")
        #expect(c.totalDiskCount() == 1)
        try await Task.sleep(nanoseconds: 1_200_000_000)
        await c.deleteOldFiles()
        #expect(c.totalDiskCount() == 0)

        let small = SDImageCacheConfig()
        small.maxDiskSize = 10
        let s = makeCache(config: small)
        try await s.store(nil, imageData: Data(count: 20_000), forKey: "big")
        #expect(s.totalDiskCount() == 0)  // over the limit at once: swept after the store

        #expect(c.cachePath(forKey: nil) == nil && c.cachePath(forKey: "any") != nil)
        #expect(c.cachePath(forKey: "http://a.com/b/c.jpg")!.hasSuffix(".jpg"))
        #expect(!c.cachePath(forKey: "http://maps.com/map?center=48.8566,2.3522")!.contains("."))
        #expect(c.cachePath(forKey: "http://a.com/c.jpg?size=" + String(repeating: "9", count: 300))!.hasSuffix(".jpg"))
        #expect(!(c.cachePath(forKey: "http://a.com/c." + String(repeating: "x", count: 300))!.split(separator: "/").last!.contains(".")))
    }

    @Test("While the process runs: the size limit holds after every store; old entries go at the next store after the sweep interval")
    func limitsHoldWhileRunning() async throws {
        let sized = SDImageCacheConfig()
        sized.maxDiskSize = 64 << 10
        let c = makeCache(config: sized)
        for i in 0..<60 {
            try await c.store(nil, imageData: Data(repeating: UInt8(i), count: 4000), forKey: "k\(i)")
            #expect(c.totalDiskSize() <= 64 << 10)
        }
        #expect(c.totalDiskCount() > 0 && c.diskImageDataExists(withKey: "k59"))  // the newest stays

        // "new" must be younger than maxDiskAge when its own store sweeps: 3 s
        // allows a stall of that long between the write and the sweep
        let aged = SDImageCacheConfig()
        aged.maxDiskAge = 3
        aged.diskSweepInterval = 0.5
        let a = makeCache(config: aged)
        try await a.store(nil, imageData: Data(count: 100), forKey: "old")
        try await Task.sleep(nanoseconds: 3_200_000_000)
        try await a.store(nil, imageData: Data(count: 100), forKey: "new")  // no deleteOldFiles call
        #expect(!a.diskImageDataExists(withKey: "old") && a.diskImageDataExists(withKey: "new"))
    }

    @Test("Extended data rides with the entry")
    func extendedData() async throws {
        let c = makeCache()
        let (image, data) = try testImage()
        await withCheckedContinuation { k in
            c.store(image, imageData: data, forKey: "e", cacheType: .all, extendedData: Data("v1".utf8)) { _ in k.resume() }
        }
        #expect(c.extendedData(forKey: "e") == Data("v1".utf8))
        try c.storeExtendedData(nil, forKey: "e")
        #expect(c.extendedData(forKey: "e") == nil)
    }

    @Test("Memory cost limit holds (LRU); contains/clear through the protocol")
    func protocolOps() async throws {
        let config = SDImageCacheConfig()
        let (image, data) = try testImage()
        config.maxMemoryCost = image.cost * 2
        let c = makeCache(config: config)
        for i in 0..<5 { c.storeImage(toMemory: image, forKey: "m\(i)") }
        #expect(c.imageFromMemoryCache(forKey: "m4") != nil && c.imageFromMemoryCache(forKey: "m0") == nil)
        try await c.store(image, imageData: data, forKey: "p", cacheType: .disk)
        let found: SDImageCacheType = await withCheckedContinuation { k in
            c.containsImage(forKey: "p", cacheType: .all) { k.resume(returning: $0) }
        }
        #expect(found == .disk)
        await withCheckedContinuation { k in c.clear(with: .all) { k.resume() } }
        #expect(c.totalDiskCount() == 0 && c.imageFromMemoryCache(forKey: "m4") == nil)
    }
}

final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: T?
    var value: T? {
        get { lock.lock(); defer { lock.unlock() }; return _value }
        set { lock.lock(); _value = newValue; lock.unlock() }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
