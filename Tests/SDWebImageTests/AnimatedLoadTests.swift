import Foundation
import SDTestSupport
import SDWebImage
import Testing

/// A subclass as `.animatedImageClass` (SDWebImage's custom animated class tests).
final class MyAnimatedImage: SDAnimatedImage, @unchecked Sendable {}

@Suite("Animated images through the downloader, caches and manager")
struct AnimatedLoadTests {
    /// A corpus-anim row served over HTTP.
    func serve(_ format: String, minFrames: Int) throws -> (URL, AnimRow, Data) {
        let s = try #require(TestServers.shared)
        let row = try #require(AnimRow.load().first { $0.format == format && $0.frames >= minFrames })
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
        let dir = s.www.appendingPathComponent("anim")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let name = row.file.replacingOccurrences(of: "/", with: "_")
        try data.write(to: dir.appendingPathComponent(name))
        return (s.url(s.http, "/anim/" + name), row, data)
    }

    func frames(_ image: SDImage?) -> [String] {
        guard let image, let p = image.animatedProvider else { return image.map { [sha($0)] } ?? [] }
        return (0..<p.animatedImageFrameCount).compactMap { p.animatedImageFrame(at: $0).map(sha) }
    }

    @Test("An animated GIF and WebP download, then come back from memory (same object) and disk (same animation)")
    func managerRoundTrip() async throws {
        for format in ["gif", "webp"] {
            let (url, row, data) = try serve(format, minFrames: 3)
            let (m, cache) = makeManager()
            let net = try #require(await m.load(url).last)
            let image = try #require(net.image as? SDAnimatedImage)
            #expect(net.type == .none && frames(image) == row.expected.map(\.sha))
            #expect(Int(image.animatedImageLoopCount) == row.loop && image.animatedImageData == data)
            let mem = try #require(await m.load(url).last)
            #expect(mem.type == .memory && mem.image === image)
            cache.waitForPendingWrites()
            #expect(cache.diskImageData(forKey: url.absoluteString) == data)  // the original bytes on disk
            cache.clearMemory()
            let disk = try #require(await m.load(url).last)
            #expect(disk.type == .disk && disk.image is SDAnimatedImage && frames(disk.image) == row.expected.map(\.sha))
        }
    }

    @Test("decodeFirstFrameOnly: a still image from the network, and a memory hit on an animation gives a new still one")
    func firstFrameOnly() async throws {
        let (url, row, _) = try serve("apng", minFrames: 2)
        let (m, _) = makeManager()
        // a failure says why (it failed once, only under a loaded make test: no image, cause unseen)
        let first = await m.load(url, [.decodeFirstFrameOnly]).last
        let still = try #require(first?.image, "no image: \(String(describing: first?.error)), \(String(describing: first))")
        #expect(!still.sd_isAnimated && sha(still) == row.expected[0].sha)
        let (m2, _) = makeManager()
        let second = await m2.load(url).last
        let animated = try #require(second?.image, "no image: \(String(describing: second?.error))")
        #expect(animated.sd_isAnimated)
        let hit = try #require(await m2.load(url, [.decodeFirstFrameOnly]).last)
        #expect(hit.type == .memory && hit.image !== animated && hit.image?.sd_isAnimated == false)
    }

    @Test("animatedImageClass gives the subclass; matchAnimatedImageClass refuses a plain memory hit; preloadAllFrames")
    func animatedImageClass() async throws {
        let (url, row, _) = try serve("gif", minFrames: 3)
        let (m, _) = makeManager()
        let ctx: SDWebImageContext = [.animatedImageClass: MyAnimatedImage.self]
        let mine = try #require(await m.load(url, [.preloadAllFrames], ctx).last?.image as? MyAnimatedImage)
        #expect(mine.isAllFramesLoaded && mine.cost == mine.bitmap.cost * row.frames)
        // a still image in memory: a hit without match, a miss (then the network) with it
        let s = try #require(TestServers.shared)
        let jpegURL = s.url(s.http, "/img/small.jpg?animclass")
        let (m2, _) = makeManager()
        let plain = try #require(await m2.load(jpegURL).last?.image)
        #expect(type(of: plain) == SDImage.self)
        #expect(await m2.load(jpegURL, [], ctx).last?.type == .memory)
        let matched = try #require(await m2.load(jpegURL, [.matchAnimatedImageClass], ctx).last)
        #expect(matched.type != .memory && matched.image is MyAnimatedImage && matched.image?.sd_isAnimated == false)
    }

    @Test("An APNG transformed frame by frame is stored as an APNG: from disk the same frames, durations and loop count")
    func transformedAPNGStaysAPNG() async throws {
        let (url, row, _) = try serve("apng", minFrames: 4)
        let flip = SDImageFlippingTransformer(horizontal: true, vertical: false)
        let (m, cache) = makeManager()
        let all = try #require(await m.load(url, [.transformAnimatedImage], [.imageTransformer: flip]).last?.image)
        let made = try #require(all.animatedProvider)
        cache.waitForPendingWrites()
        cache.clearMemory()
        let fromDisk = try #require(await m.load(url, [.transformAnimatedImage], [.imageTransformer: flip]).last)
        let stored = try #require(fromDisk.image?.animatedProvider, "\(row.file): stored animated")
        #expect(fromDisk.type == .disk && fromDisk.image?.format == .png)
        #expect(stored.animatedImageFrameCount == UInt(row.frames) && stored.animatedImageLoopCount == UInt(row.loop))
        for i in 0..<UInt(row.frames) {
            #expect(stored.animatedImageDuration(at: i) == made.animatedImageDuration(at: i), "\(row.file) \(i)")
            let a = try #require(stored.animatedImageFrame(at: i)), b = try #require(made.animatedImageFrame(at: i))
            // straight 8-bit in the file: premultiplied pixels come back within 1
            let close = a.withUnsafeBytes { x in b.withUnsafeBytes { y in zip(x, y).allSatisfy { abs(Int($0) - Int($1)) <= 1 } } }
            #expect(close, "\(row.file) frame \(i)")
        }
    }

    @Test("A transformer: every frame with transformAnimatedImage, the first frame only (a still image) without")
    func transformAnimated() async throws {
        let (url, row, _) = try serve("webp", minFrames: 3)
        let flip = SDImageFlippingTransformer(horizontal: true, vertical: false)
        let (m, _) = makeManager()
        let still = try #require(await m.load(url, [], [.imageTransformer: flip]).last?.image)
        #expect(!still.sd_isAnimated)
        let (m2, c2) = makeManager()
        let all = try #require(await m2.load(url, [.transformAnimatedImage], [.imageTransformer: flip]).last?.image)
        // stored without original bytes: in the source's format (animated WebP), still animated;
        // WebPAnimEncoder may merge identical consecutive frames, so the timeline is what must match
        c2.waitForPendingWrites()
        c2.clearMemory()
        let fromDisk = try #require(await m2.load(url, [.transformAnimatedImage], [.imageTransformer: flip]).last)
        let stored = try #require(fromDisk.image?.animatedProvider)
        let total = { (p: any SDAnimatedImageProvider) in (0..<p.animatedImageFrameCount).map { p.animatedImageDuration(at: $0) }.reduce(0, +) }
        #expect(fromDisk.type == .disk && fromDisk.image?.format == .webP && fromDisk.image?.sd_isAnimated == true)
        #expect(stored.animatedImageFrameCount > 1 && stored.animatedImageFrameCount <= UInt(row.frames))
        #expect(abs(total(stored) - total(try #require(all.animatedProvider))) < 0.001)
        #expect(stored.animatedImageLoopCount == UInt(row.loop))
        #expect(all.sd_imageFrameCount == row.frames && all.sd_imageLoopCount == row.loop)
        let original = try #require(SDAnimatedImage(data: try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))))
        let f2 = try #require(all.animatedProvider?.animatedImageFrame(at: 2))
        let o2 = try #require(original.animatedImageFrame(at: 2))
        #expect(pixel(f2, 0, 0) == pixel(o2, o2.width - 1, 0) && pixel(still, 0, 1) == pixel(original, original.width - 1, 1))
        #expect(abs(all.duration - original.duration) < 1e-9)
    }

    @Test("An AVIF image sequence (avifenc): every frame equals libavif's decode, from the network, memory and disk; encoded back as a sequence")
    func avifSequence() async throws {
        let s = try #require(TestServers.shared)
        let dir = s.www.appendingPathComponent("avifseq")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let sources = try (0..<3).map { i in
            try Bitmap(width: 48, height: 32) { raw in
                for p in 0..<(48 * 32) {
                    let x = p % 48, y = p / 48
                    raw[p * 4] = UInt8((x * 5 + i * 80) & 0xFF); raw[p * 4 + 1] = UInt8(y * 7); raw[p * 4 + 2] = UInt8(i * 100); raw[p * 4 + 3] = 255
                }
            }
        }
        for (i, b) in sources.enumerated() { try Data(b.pngData()).write(to: dir.appendingPathComponent("f\(i).png")) }
        let d = dir.path
        // quantizer 0, 4:4:4 (avifenc 0.11's --lossless at speed 8 and above repeats frame 0's pixels here)
        #expect(system("avifenc --min 0 --max 0 -y 444 -s 10 --timescale 1000 --duration 100 '\(d)/f0.png' --duration 250 '\(d)/f1.png' "
                       + "--duration 10 '\(d)/f2.png' '\(d)/seq.avif' >/dev/null 2>&1") == 0)
        // the oracle: each frame as libavif's own avifdec decodes it
        let want = try (0..<3).map { i in
            #expect(system("avifdec --index \(i) '\(d)/seq.avif' '\(d)/ref\(i).png' >/dev/null 2>&1") == 0)
            return sha(try #require(SDImage(data: try Data(contentsOf: dir.appendingPathComponent("ref\(i).png")))))
        }
        #expect(Set(want).count == 3)
        let data = try Data(contentsOf: dir.appendingPathComponent("seq.avif"))
        let image = try #require(SDAnimatedImage(data: data))
        #expect(image.format == .avif && image.sd_isAnimated && frames(image) == want)
        #expect(image.animatedImageLoopCount == 0 && (0..<3).map { image.animatedImageDuration(at: $0) } == [0.1, 0.25, 0.1])
        #expect(SDImageAVIFCoder.shared.decodedImage(with: data, options: nil)?.sd_imageFrameCount == 3)
        let first = try #require(SDImageAVIFCoder.shared.decodedImage(with: data, options: [.decodeFirstFrameOnly: true]))
        #expect(!first.sd_isAnimated && sha(first) == want[0])
        // through the manager: network, memory (same object), disk (same frames)
        let url = s.url(s.http, "/avifseq/seq.avif")
        let (m, cache) = makeManager()
        let net = try #require(await m.load(url).last)
        let loaded = try #require(net.image as? SDAnimatedImage)
        #expect(net.type == .none && frames(loaded) == want && loaded.animatedImageData == data)
        #expect(await m.load(url).last?.image === loaded)
        cache.waitForPendingWrites()
        cache.clearMemory()
        let disk = try #require(await m.load(url).last)
        #expect(disk.type == .disk && frames(disk.image) == want)
        // encoded back (lossless): a sequence again, same timeline, frames within 1 of the sources
        let back = try #require(SDImageCodersManager.shared.encodedData(with: image, format: .avif, options: [.encodeCompressionQuality: 1.0]))
        let again = try #require(SDAnimatedImage(data: back))
        #expect(again.format == .avif && again.animatedImageFrameCount == 3)
        #expect((0..<3).map { again.animatedImageDuration(at: $0) } == [0.1, 0.25, 0.1])
        for i in 0..<3 {
            let a = try #require(again.animatedImageFrame(at: UInt(i))), b = try #require(image.animatedImageFrame(at: UInt(i)))
            let close = a.withUnsafeBytes { x in b.withUnsafeBytes { y in zip(x, y).allSatisfy { abs(Int($0) - Int($1)) <= 1 } } }
            #expect(close, "frame \(i)")
        }
        let still = try #require(SDImageCodersManager.shared.encodedData(with: image, format: .avif, options: [.encodeFirstFrameOnly: true]))
        #expect(SDAnimatedImage(data: still)?.animatedImageFrameCount == 1)
    }
}
