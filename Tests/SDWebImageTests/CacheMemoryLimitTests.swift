import Foundation
import SDTestSupport
import SDWebImage
import Testing

@Suite("SDImageCache memory limits: age, per-image cost, memory pressure")
struct CacheMemoryLimitTests {
    @Test("maxMemoryAge: an image older than it is a memory miss, still read from disk")
    func memoryAge() async throws {
        // margins of 2 s either way: a stall under TSan and a busy machine cannot flip an answer
        let config = SDImageCacheConfig()
        config.maxMemoryAge = 2
        let c = makeCache(config: config)
        let (image, data) = try testImage()
        try c.storeImageData(toDisk: data, forKey: "k")  // on disk first, so the memory store below is the last
        c.store(image, imageData: nil, forKey: "k", toDisk: false)
        #expect(c.imageFromMemoryCache(forKey: "k") === image)
        try await Task.sleep(nanoseconds: 4_000_000_000)
        #expect(c.imageFromMemoryCache(forKey: "k") == nil && c.memoryCount == 0)
        #expect(c.imageFromCache(forKey: "k")?.width == 40)  // the disk still has it (and memory again)
        c.config.maxMemoryAge = 0  // a change applies to the live cache: no age limit now
        try await Task.sleep(nanoseconds: 2_500_000_000)
        #expect(c.imageFromMemoryCache(forKey: "k") != nil)
    }

    @Test("maxMemoryEntryCost: an image costing more is not kept in memory; smaller ones are")
    func entryCost() throws {
        let config = SDImageCacheConfig()
        let (small, _) = try testImage(40, 30)
        let (big, _) = try testImage(400, 300)
        config.maxMemoryEntryCost = small.cost
        let c = makeCache(config: config)
        c.store(small, imageData: nil, forKey: "small", toDisk: false)
        c.store(big, imageData: nil, forKey: "big", toDisk: false)
        #expect(c.imageFromMemoryCache(forKey: "small") === small)
        #expect(c.imageFromMemoryCache(forKey: "big") == nil)
        #expect(c.memoryCost == small.cost)
    }

    @Test("Memory pressure (PSI over the threshold) halves the memory tier until it passes; calm keeps it")
    func pressure() async throws {
        let psi = FileManager.default.temporaryDirectory.appendingPathComponent("psi-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try "some avg10=1.00 avg60=0.00 avg300=0.00 total=1\n".write(toFile: psi, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: psi) }
        let config = SDImageCacheConfig()
        config.memoryPressureFile = .some(psi)
        config.memoryPressureInterval = 0.02
        let c = makeCache(config: config)
        let (image, _) = try testImage(100, 100)
        for i in 0..<16 { c.store(image, imageData: nil, forKey: "k\(i)", toDisk: false) }
        let full = c.memoryCost
        #expect(full == 16 * image.cost)
        let poolTrims = Bitmap.poolTrimCount
        // looks that began after the file was written: two more than now (never a time: CI can be starved)
        func twoMoreLooks() async -> Bool {
            let now = c.memoryPressurePolls ?? 0
            return await eventually(600) { (c.memoryPressurePolls ?? 0) >= now + 2 }
        }
        #expect(await twoMoreLooks())
        #expect(c.memoryCost == full)  // 1% stalled: below the default 10
        #expect(Bitmap.poolTrimCount == poolTrims)
        try "some avg10=35.00 avg60=5.00 avg300=1.00 total=99\n".write(toFile: psi, atomically: true, encoding: .utf8)
        for _ in 0..<6000 where c.memoryCost > full / 8 || Bitmap.poolTrimCount == poolTrims {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(c.memoryCost <= full / 8)
        #expect(Bitmap.poolTrimCount > poolTrims)  // the C pixel pool is emptied too
        #expect(c.imageFromMemoryCache(forKey: "k15") != nil || c.memoryCount == 0)  // the newest go last
        try "some avg10=0.00 avg60=5.00 avg300=1.00 total=99\n".write(toFile: psi, atomically: true, encoding: .utf8)
        #expect(await twoMoreLooks())  // not a look begun before the write was over
        for i in 0..<4 { c.store(image, imageData: nil, forKey: "n\(i)", toDisk: false) }
        let refilled = c.memoryCost
        #expect(await twoMoreLooks())
        #expect(c.memoryCost == refilled)  // pressure gone: nothing more is trimmed
        // off: no monitor at all
        let quiet = SDImageCacheConfig()
        quiet.memoryPressureFile = .some(psi)
        quiet.memoryPressureInterval = 0.02
        quiet.shouldTrimMemoryUnderPressure = false
        let q = makeCache(config: quiet)
        try "some avg10=90.00 avg60=5.00 avg300=1.00 total=99\n".write(toFile: psi, atomically: true, encoding: .utf8)
        q.store(image, imageData: nil, forKey: "q", toDisk: false)
        #expect(q.memoryPressurePolls == nil)  // no monitor to look
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(q.memoryCost == image.cost)
    }

    @Test("The default memory limit is a quarter of what this process may use, at most 512 MiB")
    func defaultLimit() {
        #expect(SDImageCacheConfig.defaultMaxMemoryCost > 0 && SDImageCacheConfig.defaultMaxMemoryCost <= 512 << 20)
        #expect(SDImageCacheConfig().maxMemoryCost == SDImageCacheConfig.defaultMaxMemoryCost)
    }

    @Test("A bitmap evicted from memory is freed (back to the pixel pool) when nothing else holds it, not while something does")
    func evictedBitmapsAreFreed() throws {
        // Freeing a Bitmap is sd_bitmap_free, which returns its canvas to the
        // pixel pool (the C unit test pixel_pool checks that side); here: the
        // cache lets go of what it evicts, and only of that. (The pool itself
        // is process-wide and other suites run in parallel, so its bytes and
        // addresses are not asserted here.)
        let config = SDImageCacheConfig()
        config.maxMemoryCost = 10 << 20  // one 6.9 MB image, not two
        let c = makeCache(config: config)
        func image() throws -> SDImage { SDImage(bitmap: try Bitmap(width: 1531, height: 1129)) }

        var held: SDImage? = try image()
        weak let heldBitmap = held!.bitmap
        c.storeImage(toMemory: held!, forKey: "held")
        weak var onlyCached: Bitmap?
        do {
            let other = try image()
            onlyCached = other.bitmap
            c.storeImage(toMemory: other, forKey: "evicts-held")
        }
        #expect(c.imageFromMemoryCache(forKey: "held") == nil)
        #expect(heldBitmap != nil && held!.width == 1531)  // evicted, still ours
        #expect(onlyCached != nil)  // in the cache
        c.storeImage(toMemory: try image(), forKey: "evicts-the-other")
        #expect(c.imageFromMemoryCache(forKey: "evicts-held") == nil)
        #expect(onlyCached == nil)  // evicted and held by nobody: freed
        held = nil
        #expect(heldBitmap == nil)
    }
}
