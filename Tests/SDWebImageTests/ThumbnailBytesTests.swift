import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// A thumbnail of a progressive JPEG ends its transfer once settled; the
/// disk cache keeps the first bytes as what they are ("complete up to");
/// a later thumbnail is a disk hit and a larger load fetches only the rest
/// (Range + If-Range), or the whole file when it changed. nginx
/// (/trickle/, rate-limited) counts the bytes it sent.
@Suite("Thumbnails from part of a file", .serialized)
struct ThumbnailBytesTests {
    let servers = TestServers.shared

    /// A copy of `name` under a fresh name, served by the fault server:
    /// the first half, then held until `/open?gate=<id>` (whatever the
    /// machine's speed, a thumbnail's transfer can only complete by ending
    /// early), with an ETag of its bytes and Range honoured with If-Range;
    /// its requests and written bytes counted under the id.
    func fresh(_ s: TestServers, _ name: String) throws -> (URL, String, Data) {
        let file = try Data(contentsOf: s.www.appendingPathComponent("trickle/\(name)"))
        let id = "\(UInt32.random(in: 0...UInt32.max))"
        let copy = "trickle/\(id)-\(name)"
        try file.write(to: s.www.appendingPathComponent(copy))
        let url = s.url(s.fault, "/drip-file?name=\(copy)&piece=4096&gap=0&mid=\(id)&id=\(id)&etag=auto&ranges=1")
        return (url, id, file)
    }

    /// The entry's bytes, partial or not (`diskImageData` answers only the
    /// file's), once the disk writes queued before are done.
    func storedBytes(_ cache: SDImageCache, _ key: String) -> Data? {
        _ = cache.extendedData(forKey: key)  // waits for the disk queue
        return cache.diskCache?.data(forKey: key)
    }

    static let thumbnail: SDWebImageContext = [.imageThumbnailPixelSize: CGSize(width: 112, height: 112)]

    @Test("Ends early, stored as partial, a thumbnail again from disk, the full size by Range")
    func partialThenRest() async throws {
        let s = try #require(servers, "test servers could not start")
        let (url, id, file) = try fresh(s, "grey.jpg")
        let (m, cache) = makeManager()
        let first = await m.load(url, [], Self.thumbnail)
        s.faultEnded(id)
        let thumb = try #require(first.last?.image)
        #expect(thumb.width == 112 && thumb.height == 75)
        // within the tolerance (1) of the whole file's thumbnail, the filter's level besides
        let whole = try #require(SDImageCacheDecodeImageData(file, "ref", [], Self.thumbnail))
        let diff = try #require(maxDiff(thumb.bitmap, whole.bitmap))
        #expect(diff <= 2)
        let key = try #require(m.cacheKey(for: url))
        let stored = try #require(storedBytes(cache, key))
        #expect(stored.count <= file.count / 2 + 4096 && stored == file.prefix(stored.count))
        // the public accessors of the file's bytes: a partial entry is not it
        #expect(cache.diskImageData(forKey: key) == nil && !cache.diskImageDataExists(withKey: key))
        let raw = try #require(cache.extendedData(forKey: key))
        let partial = try #require(try JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw).partial)
        #expect(partial.length == stored.count && partial.fullLength == file.count)
        #expect(partial.completeUpToWidth == 225 && partial.completeUpToHeight == 150 && partial.settleLevels == 1)
        let sent = s.faultSent(id)
        #expect(sent <= file.count / 2 + 2 * 4096)  // the held half never went
        // a new manager on the same disk, another thumbnail as small (not the
        // stored 112-px one): made from the stored first bytes, no request
        cache.clearMemory()
        let (m2, _) = makeManager(cache)
        let again = await m2.load(url, [], [.imageThumbnailPixelSize: CGSize(width: 100, height: 100)])
        #expect(again.last?.image?.width == 100 && again.last?.type == .disk)
        #expect(s.flakyHits(id) == 1)
        // the bytes alone are not the file: a miss, never the prefix
        let bytes = await m2.load(url, [.avoidDecodeImage, .fromCacheOnly])
        #expect(bytes.last?.data == nil)
        // full size: only the missing bytes, then the whole file is stored
        let full = await m2.load(url)
        let image = try #require(full.last?.image)
        #expect(image.width == 1800 && image.height == 1200)
        #expect(s.flakyHits(id) == 2 && s.faultSent(id) == sent + file.count - stored.count)
        #expect(cache.diskImageData(forKey: key) == file && cache.diskImageDataExists(withKey: key))
        let now = try cache.extendedData(forKey: key).map { try JSONDecoder().decode(SDWebImageHTTPValidators.self, from: $0) }
        #expect(now?.partial == nil)
    }

    @Test("Through a caches manager: the stored first bytes are found in its SDImageCache and the full size fetches only the rest")
    func partialThroughCachesManager() async throws {
        let s = try #require(servers, "test servers could not start")
        let (url, id, file) = try fresh(s, "grey.jpg")
        let cache = makeCache()
        let m = SDWebImageManager(cache: SDImageCachesManager(caches: [cache]), loader: patientDownloader())
        let first = await m.load(url, .waitStoreCache, Self.thumbnail)
        s.faultEnded(id)
        #expect(first.last?.image?.width == 112)
        let key = try #require(m.cacheKey(for: url))
        let stored = try #require(storedBytes(cache, key))
        #expect(stored.count <= file.count / 2 + 4096)
        let sent = s.faultSent(id)
        let full = await m.load(url)
        #expect(full.last?.image?.width == 1800)
        #expect(s.flakyHits(id) == 2 && s.faultSent(id) == sent + file.count - stored.count)
    }

    @Test("If-Range: a file that changed since comes whole")
    func changedFileComesWhole() async throws {
        let s = try #require(servers, "test servers could not start")
        let (url, id, file) = try fresh(s, "grey.jpg")
        let (m, cache) = makeManager()
        _ = await m.load(url, [], Self.thumbnail)
        s.faultEnded(id)
        let key = try #require(m.cacheKey(for: url))
        #expect((storedBytes(cache, key)?.count ?? .max) <= file.count / 2 + 4096)
        // another picture under the same URL (its ETag is of its bytes)
        let other = try TestServers.jpeg(width: 640, height: 480, progressive: false)
        let name = try #require(url.query?.split(separator: "&").first { $0.hasPrefix("name=") }?.dropFirst(5))
        try other.write(to: s.www.appendingPathComponent(String(name)))
        let sent = s.faultSent(id)
        let full = await m.load(url)
        #expect(full.last?.image?.width == 640)
        #expect(s.faultSent(id) == sent + other.count)
        #expect(cache.diskImageData(forKey: key) == other)
    }

    @Test("An origin that advertises ranges but ignores them: the larger load reads the whole file again")
    func originIgnoresRange() async throws {
        let s = try #require(servers, "test servers could not start")
        let file = try Data(contentsOf: s.www.appendingPathComponent("trickle/grey.jpg"))
        let id = "norange-\(UInt32.random(in: 0...UInt32.max))"
        let url = s.url(s.fault, "/drip-file?name=trickle/grey.jpg&piece=4096&gap=0&mid=\(id)&etag=v1&id=\(id)")
        let (m, cache) = makeManager()
        let thumb = await m.load(url, [], Self.thumbnail)
        s.faultEnded(id)
        #expect(thumb.last?.image?.width == 112)
        let key = try #require(m.cacheKey(for: url))
        let partial = try #require(storedBytes(cache, key))
        #expect(partial.count <= file.count / 2 + 4096)
        let full = await m.load(url)
        #expect(full.last?.image?.width == 1800 && full.last?.image?.height == 1200)
        #expect(cache.diskImageData(forKey: key) == file)
        #expect(s.flakyHits(id) == 2)
    }

    @Test("A full-size load that joins a thumbnail's transfer gets the whole file: the rest is fetched, not the prefix")
    func joinerWantsMore() async throws {
        let s = try #require(servers, "test servers could not start")
        let id = "join-\(UInt32.random(in: 0...UInt32.max))"
        // the body starts once both loads are on the one transfer, and
        // holds at its half until the rest was asked for
        let url = s.url(s.fault, "/drip-file?name=trickle/grey.jpg&piece=4096&gap=0&first=\(id)-a&mid=\(id)-b&id=\(id)")
        let downloader = patientDownloader()
        let thumb = LoadLog()
        let full = LoadLog()
        downloader.downloadImage(with: url, options: [], context: Self.thumbnail, progress: nil) { image, data, error, finished in
            thumb.block(image, data, error, .none, finished, url)
        }
        for _ in 0..<12000 where s.flakyHits(id) < 1 { usleep(10000) }  // the transfer reached the origin
        downloader.downloadImage(with: url) { image, data, error, finished in
            full.block(image, data, error, .none, finished, url)
        }
        _ = s.faultGet("/open?gate=\(id)-a")
        for _ in 0..<12000 where s.flakyHits(id) < 2 { usleep(10000) }  // the thumbnail settled: the rest asked for
        _ = s.faultGet("/open?gate=\(id)-b")
        await thumb.wait()
        await full.wait()
        #expect(thumb.last?.image?.width == 112)
        let image = try #require(full.last?.image)
        #expect(image.width == 1800 && image.height == 1200)
        let file = try Data(contentsOf: s.www.appendingPathComponent("trickle/grey.jpg"))
        #expect(full.last?.data == file)
        #expect(s.flakyHits(id) == 2)  // the thumbnail's transfer, then the rest (this origin: the whole file)
    }

    @Test(".fetchWholeFile and thumbnailSettleLevels -1 read the whole file")
    func wholeFile() async throws {
        let s = try #require(servers, "test servers could not start")
        let (url, id, file) = try fresh(s, "grey.jpg")
        _ = s.faultGet("/open?gate=\(id)")  // nothing held: these read to the end
        let (m, cache) = makeManager()
        let log = await m.load(url, [.fetchWholeFile], Self.thumbnail)
        #expect(log.last?.image?.width == 112)
        #expect(s.faultSent(id) == file.count)
        #expect(cache.diskImageData(forKey: try #require(m.cacheKey(for: url))) == file)
        let config = SDWebImageDownloaderConfig()
        config.thumbnailSettleLevels = -1
        let (url2, id2, _) = try fresh(s, "grey.jpg")
        _ = s.faultGet("/open?gate=\(id2)")
        let m2 = SDWebImageManager(cache: makeCache(), loader: patientDownloader(config))
        _ = await m2.load(url2, [], Self.thumbnail)
        #expect(s.faultSent(id2) == file.count)
    }
}
/// The largest channel difference of two bitmaps of one size (nil otherwise).
func maxDiff(_ a: Bitmap, _ b: Bitmap) -> Int? {
    guard a.width == b.width, a.height == b.height else { return nil }
    return a.withUnsafeBytes { p in
        b.withUnsafeBytes { q in
            var worst = 0
            for y in 0..<a.height {
                for x in 0..<(a.width * 4) {
                    worst = max(worst, abs(Int(p[y * a.bytesPerRow + x]) - Int(q[y * b.bytesPerRow + x])))
                }
            }
            return worst
        }
    }
}
