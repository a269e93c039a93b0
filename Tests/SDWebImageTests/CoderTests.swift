import Foundation
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

extension SDImageFormat {
    /// A format of the user's own, numbered as SDWebImage's custom formats are.
    static let ppm = SDImageFormat(rawValue: SDImageFormat.firstCustomRawValue)
}

/// A toy format of our own, as a user would write one: binary PPM ("P6"),
/// decoded and encoded in Swift. Progressive: rows that arrived are shown,
/// the rest transparent. Honours the thumbnail and scale options.
final class PPMCoder: SDProgressiveImageCoder, @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var finished = false
    private(set) var updates = 0
    private static let countLock = NSLock()
    nonisolated(unsafe) private static var made = 0
    /// Incremental instances made so far.
    static var instances: Int { countLock.lock(); defer { countLock.unlock() }; return made }

    init() {}
    required init(incrementalWithOptions options: SDImageCoderOptions?) {
        Self.countLock.lock(); defer { Self.countLock.unlock() }
        Self.made += 1
    }

    static func encode(width: Int, height: Int, pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> Data {
        var d = Data("P6\n\(width) \(height)\n255\n".utf8)
        for y in 0..<height { for x in 0..<width { let (r, g, b) = pixel(x, y); d.append(contentsOf: [r, g, b]) } }
        return d
    }

    /// Width, height and where the pixels start.
    static func header(_ d: Data) -> (Int, Int, Int)? {
        guard d.starts(with: Array("P6".utf8)) else { return nil }
        var fields: [Int] = [], i = d.startIndex + 2, cur = ""
        while i < d.endIndex, fields.count < 3 {
            let c = d[i]
            if c == 0x20 || c == 0x0A {
                if !cur.isEmpty { fields.append(Int(cur) ?? -1); cur = "" }
            } else {
                cur.append(Character(UnicodeScalar(c)))
            }
            i += 1
        }
        guard fields.count == 3, fields[0] > 0, fields[1] > 0, fields[2] == 255 else { return nil }
        return (fields[0], fields[1], i - d.startIndex)
    }

    static func image(_ d: Data, _ options: SDImageCoderOptions?, partial: Bool) -> SDImage? {
        guard let (w, h, start) = header(d) else { return nil }
        let rows = min(h, (d.count - start) / (w * 3))
        guard partial || rows == h else { return nil }
        guard let bitmap = try? Bitmap(width: w, height: h, initializingWith: { out in
            d.withUnsafeBytes { (src: UnsafeRawBufferPointer) in
                for y in 0..<rows { for x in 0..<w {
                    let s = start + (y * w + x) * 3, o = (y * w + x) * 4
                    out[o] = src[s + 2]; out[o + 1] = src[s + 1]; out[o + 2] = src[s]; out[o + 3] = 255
                } }
            }
        }) else { return nil }
        var result = bitmap
        if let box = options?[.decodeThumbnailPixelSize] as? CGSize, Int(box.width) < w || Int(box.height) < h {
            let s = min(box.width / Double(w), box.height / Double(h))
            result = (try? bitmap.scaled(width: max(1, Int(Double(w) * s)), height: max(1, Int(Double(h) * s)))) ?? bitmap
        }
        let scale = options?[.decodeScaleFactor] as? Double ?? 1
        return SDImage(bitmap: result, format: .ppm, scale: scale, isIncremental: partial && rows < h)
    }

    func canDecode(from data: Data?) -> Bool { data.map { Self.header($0) != nil } ?? false }
    func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? {
        data.flatMap { Self.image($0, options, partial: false) }
    }
    func canEncode(to format: SDImageFormat) -> Bool { format == .ppm }
    func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? {
        guard let image, format == .ppm else { return nil }
        return image.bitmap.withUnsafeBytes { raw in  // opaque test images: premultiplied = straight
            let p = raw.bindMemory(to: UInt32.self), stride = image.bitmap.bytesPerRow / 4
            return Self.encode(width: image.width, height: image.height) { x, y in
                let v = p[y * stride + x]
                return (UInt8(v >> 16 & 255), UInt8(v >> 8 & 255), UInt8(v & 255))
            }
        }
    }

    func canIncrementalDecode(from data: Data?) -> Bool { data.map { $0.starts(with: Array("P6".utf8)) } ?? false }
    func updateIncrementalData(_ data: Data?, finished: Bool) {
        lock.lock(); defer { lock.unlock() }
        self.data = data ?? Data()
        self.finished = finished
        updates += 1
    }
    func incrementalDecodedImage(options: SDImageCoderOptions?) -> SDImage? {
        lock.lock(); defer { lock.unlock() }
        return Self.image(data, options, partial: !finished)
    }
}

/// One row of ../shared/corpus-anim/MANIFEST.tsv.
struct AnimRow {
    let file: String, format: String, frames: Int, loop: Int
    let expected: [(ms: Int, sha: String)]

    static func load() -> [AnimRow] {
        guard let text = try? String(contentsOfFile: corpusAnim + "/MANIFEST.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            // rows that must decode whole: "D:SHA …" (not error, no-crash, partial-ok)
            guard f.count >= 6, f[5].split(separator: " ").allSatisfy({ $0.contains(":") }) else { return nil }
            let tokens = f[5].split(separator: " ").map { t in
                let p = t.split(separator: ":")
                return (Int(p[0]) ?? -1, String(p[1]))
            }
            return AnimRow(file: f[0], format: f[1], frames: Int(f[3]) ?? 0, loop: Int(f[4]) ?? -1, expected: tokens)
        }
    }
}

let corpusAnim = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/corpus-anim").path

func sha(_ image: SDImage) -> String { image.withUnsafeBytes { sha256Hex($0) } }

@Suite("Coders (ports of SDImageCoderTests and the coder parts of SDWebImageDownloaderTests)")
struct CoderTests {
    @Test("The coders manager: built-ins in SDWebImage's order, the last added is asked first, nil-safe")
    func codersManager() throws {
        let m = SDImageCodersManager()
        // SDWebImage's named coders in its order, then one per other format the core reads or writes
        let builtIns = m.coders.count
        #expect(m.coders.prefix(5).map { String(describing: type(of: $0)) }
            == ["SDImageIOCoder", "SDImageGIFCoder", "SDImageAPNGCoder", "SDImageWebPCoder", "SDImageAVIFCoder"])
        #expect(m.coders.dropFirst(5).allSatisfy { type(of: $0) == SDImageCoreCoder.self })
        #expect(m.decodedImage(with: nil, options: nil) == nil && m.encodedData(with: nil, format: .png, options: nil) == nil)
        let ppm = PPMCoder()
        let data = PPMCoder.encode(width: 3, height: 2) { x, y in (UInt8(x * 80), UInt8(y * 90), 7) }
        #expect(!m.canDecode(from: data))
        m.addCoder(ppm)
        #expect(m.coders.last === ppm && m.canDecode(from: data))
        let image = try #require(m.decodedImage(with: data, options: nil))
        #expect(image.width == 3 && image.height == 2 && pixel(image, 2, 1) == 0xFF_A0_5A_07)
        // a later coder that claims the same data wins
        let second = PPMCoder()
        m.addCoder(second)
        #expect(m.coders.suffix(2).map { $0 === ppm } == [true, false])
        m.removeCoder(ppm); m.removeCoder(second)
        #expect(!m.canDecode(from: data) && m.coders.count == builtIns)
        // PNG is asked of APNG (added after the IO coder)
        let png = try TestServers.png(width: 4, height: 4)
        #expect(m.coders.reversed().first { $0.canDecode(from: png) } is SDImageAPNGCoder)
    }

    @Test("Every decodable corpus-anim row through its coder: frames, loop, durations, each frame's pixels")
    func corpusAnimation() throws {
        let rows = AnimRow.load()
        try #require(rows.count > 150, "corpus-anim not found at \(corpusAnim)")
        for row in rows where ["gif", "webp", "apng"].contains(row.format) {
            let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
            let image = try #require(SDAnimatedImage(data: data), "\(row.file)")
            #expect(Int(image.animatedImageFrameCount) == row.frames, "\(row.file)")
            #expect(Int(image.animatedImageLoopCount) == row.loop, "\(row.file)")
            #expect(image.sd_isAnimated == (row.frames > 1))
            for (i, e) in row.expected.enumerated() {
                let frame = try #require(image.animatedImageFrame(at: UInt(i)), "\(row.file) frame \(i)")
                #expect(sha(frame) == e.sha, "\(row.file) frame \(i)")
                if row.frames > 1 { #expect(Int((image.animatedImageDuration(at: UInt(i)) * 1000).rounded()) == e.ms) }
            }
            // the coders manager gives the same animation, lazily
            let decoded = try #require(SDImageCodersManager.shared.decodedImage(with: data, options: nil))
            #expect(decoded.sd_imageFrameCount == row.frames && sha(decoded) == row.expected[0].sha)
        }
    }

    @Test("decodeFirstFrameOnly, thumbnail and scale-down options reach the built-in coders")
    func decodeOptions() throws {
        let gif = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + firstRow("gif", minFrames: 3).file))
        let still = try #require(SDImageGIFCoder.shared.decodedImage(with: gif, options: [.decodeFirstFrameOnly: true]))
        #expect(!still.sd_isAnimated && !(still is SDAnimatedImage))
        let animated = try #require(SDImageGIFCoder.shared.decodedImage(with: gif, options: nil))
        #expect(animated is SDAnimatedImage && animated.sd_isAnimated)
        // the IO coder shows an APNG's first frame only
        let apng = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + firstRow("apng", minFrames: 2).file))
        #expect(SDImageIOCoder.shared.decodedImage(with: apng, options: nil)?.sd_isAnimated == false)
        #expect(SDImageAPNGCoder.shared.decodedImage(with: apng, options: nil)?.sd_isAnimated == true)
        // a coder refuses a format not its own, even when asked directly
        #expect(SDImageGIFCoder.shared.decodedImage(with: apng, options: nil) == nil)

        let jpeg = try TestServers.jpeg(width: 400, height: 300, progressive: false)
        let thumb = try #require(SDImageIOCoder.shared.decodedImage(
            with: jpeg, options: [.decodeThumbnailPixelSize: CGSize(width: 100, height: 100), .decodeScaleFactor: 2.0]))
        #expect(thumb.width == 100 && thumb.height == 75 && thumb.scale == 2)
        let fill = try #require(SDImageIOCoder.shared.decodedImage(
            with: jpeg, options: [.decodeThumbnailPixelSize: CGSize(width: 100, height: 100), .decodePreserveAspectRatio: false]))
        #expect(fill.width == 100 && fill.height == 100)
        let small = try #require(SDImageIOCoder.shared.decodedImage(with: jpeg, options: [.decodeScaleDownLimitBytes: 40_000]))
        #expect(small.width * small.height * 4 <= 40_000 && small.width < 400)
        let big = try #require(SDImageIOCoder.shared.decodedImage(with: jpeg, options: [.decodeScaleDownLimitBytes: 100_000_000]))
        #expect(big.width == 400)  // a limit above the size never scales up
        // an animated thumbnail keeps its frames, each at the thumbnail size
        let thumbAnim = try #require(SDImageGIFCoder.shared.decodedImage(
            with: gif, options: [.decodeThumbnailPixelSize: CGSize(width: 8, height: 8)]) as? SDAnimatedImage)
        #expect(thumbAnim.width <= 8 && thumbAnim.animatedImageFrame(at: 1)?.width == thumbAnim.width)
    }

    @Test("encodeJPEGOptimizeCoding: the same pixels as without it, in fewer bytes")
    func jpegOptimizeCoding() throws {
        let image = try coordinateImage(120, 90)
        let m = SDImageCodersManager.shared
        let plain = try #require(m.encodedData(with: image, format: .jpeg, options: [.encodeCompressionQuality: 0.8]))
        let optimized = try #require(m.encodedData(with: image, format: .jpeg,
                                                   options: [.encodeCompressionQuality: 0.8, .encodeJPEGOptimizeCoding: true]))
        #expect(optimized.count < plain.count)
        let a = try #require(SDImage(data: plain)), b = try #require(SDImage(data: optimized))
        #expect(a.width == 120 && b.width == 120 && b.height == 90)
        #expect((0..<90).allSatisfy { y in (0..<120).allSatisfy { x in pixel(a, x, y) == pixel(b, x, y) } })
    }

    @Test("Encode and decode again: JPEG and PNG, max pixel size, max file size, background colour")
    func encoding() throws {
        let image = try coordinateImage(120, 90)
        let m = SDImageCodersManager.shared
        let png = try #require(m.encodedData(with: image, format: .png, options: nil))
        let back = try #require(m.decodedImage(with: png, options: nil))
        #expect(back.width == 120 && pixel(back, 33, 44) == pixel(image, 33, 44))
        let fit = try #require(m.encodedData(with: image, format: .jpeg, options: [.encodeMaxPixelSize: CGSize(width: 40, height: 40)]))
        let fitImage = try #require(SDImage(data: fit))
        #expect(fitImage.width == 40 && fitImage.height == 30 && fitImage.format == .jpeg)
        // max file size: between the best and the worst quality
        let noisy = try SDImage(bitmap: Bitmap(width: 256, height: 256) { raw in
            var s: UInt32 = 12345
            for i in 0..<raw.count { s = s &* 1103515245 &+ 12345; raw[i] = i % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: s >> 16) }
        })
        let best = try #require(m.encodedData(with: noisy, format: .jpeg, options: [.encodeCompressionQuality: 1.0]))
        let worst = try #require(m.encodedData(with: noisy, format: .jpeg, options: [.encodeCompressionQuality: 0.01]))
        let limit = (best.count + worst.count) / 2
        let capped = try #require(m.encodedData(with: noisy, format: .jpeg, options: [.encodeMaxFileSize: limit]))
        #expect(worst.count < capped.count && capped.count <= limit && capped.count < best.count)
        // JPEG has no alpha: composited on the background colour (white by default)
        let clear = try SDImage(bitmap: Bitmap(width: 16, height: 16))
        let whiteData = try #require(m.encodedData(with: clear, format: .jpeg, options: nil))
        let onWhite = try #require(SDImage(data: whiteData))
        #expect(pixel(onWhite, 8, 8) & 0xFFFFFF > 0xF0F0F0)
        let redData = try #require(m.encodedData(with: clear, format: .jpeg, options: [.encodeBackgroundColor: 0xFF0000]))
        let onRed = try #require(SDImage(data: redData))
        let p = pixel(onRed, 8, 8)
        #expect((p >> 16) & 0xFF > 0xF0 && p & 0xFF < 0x10)
        // WebP and AVIF: lossless comes back exact (opaque), lossy fits a size cap
        let webp = try #require(m.encodedData(with: image, format: .webP, options: [.encodeWebPLossless: true]))
        let webpBack = try #require(SDImage(data: webp))
        #expect(webpBack.format == .webP && pixel(webpBack, 77, 55) == pixel(image, 77, 55))
        let avif = try #require(m.encodedData(with: image, format: .avif, options: [.encodeCompressionQuality: 1.0]))
        let avifBack = try #require(SDImage(data: avif))
        #expect(avifBack.format == .avif && pixel(avifBack, 77, 55) == pixel(image, 77, 55))
        let webpBest = try #require(m.encodedData(with: noisy, format: .webP, options: nil))
        let webpCapped = try #require(m.encodedData(with: noisy, format: .webP, options: [.encodeMaxFileSize: webpBest.count / 2]))
        #expect(webpCapped.count <= webpBest.count / 2 && SDImage(data: webpCapped)?.width == 256)
        #expect(m.canEncode(to: .webP) && m.canEncode(to: .avif) && m.canEncode(to: .gif))
        // GIF: an animation keeps its frames, durations and loop count (test12 round trip)
        let frames = try (0..<3).map { i in
            SDImageFrame(image: try SDImage(bitmap: Bitmap(width: 20, height: 10) { raw in
                let p = raw.bindMemory(to: UInt32.self)
                for j in 0..<200 { p[j] = j % 20 < 10 + i ? 0xFF00_00FF << UInt32(8 * i) | 0xFF00_0000 : 0 }
            }), duration: 0.1 * Double(i + 1))
        }
        let anim = try #require(SDImage.animatedImage(with: frames, loopCount: 4))
        let gif = try #require(m.encodedData(with: anim, format: .gif, options: nil))
        let gifBack = try #require(SDAnimatedImage(data: gif))
        #expect(gifBack.animatedImageFrameCount == 3 && gifBack.animatedImageLoopCount == 4)
        #expect((0..<3).map { gifBack.animatedImageDuration(at: UInt($0)) } == [0.1, 0.2, 0.3])
        let f2 = try #require(gifBack.animatedImageFrame(at: 2))
        #expect(pixel(f2, 0, 0) >> 24 == 0xFF && pixel(f2, 19, 0) == 0 && pixel(f2, 11, 5) >> 24 == 0xFF)
        let firstOnly = try #require(m.encodedData(with: anim, format: .gif, options: [.encodeFirstFrameOnly: true]))
        #expect(SDAnimatedImage(data: firstOnly)?.animatedImageFrameCount == 1)
        // WebP: an animation stays one (WebPAnimEncoder); lossless frames come back exact
        let webpAnim = try #require(m.encodedData(with: anim, format: .webP, options: [.encodeWebPLossless: true]))
        let webpAnimBack = try #require(SDAnimatedImage(data: webpAnim))
        #expect(webpAnimBack.format == .webP && webpAnimBack.animatedImageFrameCount == 3 && webpAnimBack.animatedImageLoopCount == 4)
        #expect((0..<3).map { webpAnimBack.animatedImageDuration(at: UInt($0)) } == [0.1, 0.2, 0.3])
        for i in 0..<3 {
            let a = try #require(webpAnimBack.animatedImageFrame(at: UInt(i))), b = frames[i].image
            #expect((0..<10).allSatisfy { y in (0..<20).allSatisfy { x in pixel(a, x, y) == pixel(b, x, y) } })
        }
        let webpLossy = try #require(m.encodedData(with: anim, format: .webP, options: [.encodeCompressionQuality: 0.5]))
        #expect(SDAnimatedImage(data: webpLossy)?.animatedImageFrameCount == 3)
        let webpFirst = try #require(m.encodedData(with: anim, format: .webP, options: [.encodeFirstFrameOnly: true]))
        #expect(SDAnimatedImage(data: webpFirst)?.animatedImageFrameCount == 1)
        // undefined: PNG with alpha, JPEG without
        #expect(SDImageFormat(data: m.encodedData(with: clear, format: .undefined, options: nil)) == .png)
        #expect(SDImageFormat(data: m.encodedData(with: image, format: .undefined, options: nil)) == .jpeg)
    }

    @Test("SDAnimatedImage: init from data and scale, preload and unload, memory cost, a still image in the class")
    func animatedImage() throws {
        #expect(SDAnimatedImage(data: Data("not an image".utf8)) == nil)
        let row = try firstRow("gif", minFrames: 3)
        let data = try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
        let image = try #require(SDAnimatedImage(data: data, scale: 2))
        #expect(image.scale == 2 && image.animatedImageData == data && image.format == .gif)
        #expect(image.animatedImageFrame(at: 1)?.scale == 2)
        let one = image.bitmap.cost
        #expect(image.cost == one && !image.isAllFramesLoaded)
        image.preloadAllFrames()
        #expect(image.isAllFramesLoaded && image.cost == one * row.frames)
        #expect(sha(try #require(image.animatedImageFrame(at: 2))) == row.expected[2].sha)
        image.unloadAllFrames()
        #expect(!image.isAllFramesLoaded && image.cost == one)
        #expect(sha(try #require(image.animatedImageFrame(at: 2))) == row.expected[2].sha)  // decoded again
        // a static JPEG in the animated class: not animated, one frame
        let jpeg = try TestServers.jpeg(width: 20, height: 10, progressive: false)
        let still = try #require(SDAnimatedImage(data: jpeg))
        #expect(!still.sd_isAnimated && still.animatedImageFrameCount == 1 && still.format == .jpeg)
    }

    @Test("A user's coder (PPM) through .imageCoder: download, incremental previews from one instance, disk cache, thumbnail, transformer")
    func customCoderEverywhere() async throws {
        let s = try #require(TestServers.shared)
        let ppm = PPMCoder.encode(width: 40, height: 120) { x, y in (UInt8(x), UInt8(y), 200) }
        try FileManager.default.createDirectory(at: s.www.appendingPathComponent("ppm"), withIntermediateDirectories: true)
        try ppm.write(to: s.www.appendingPathComponent("ppm/a.ppm"))
        let list = SDImageCodersManager()
        list.addCoder(PPMCoder())
        let context: SDWebImageContext = [.imageCoder: list]
        // a download, decoded by the PPM coder; without it, bad data
        let d = patientDownloader()
        let plain = await d.load(s.url(s.http, "/ppm/a.ppm"))
        #expect(plain.sdError?.code == .badImageData)
        let got = await d.load(s.url(s.http, "/ppm/a.ppm"), [], context)
        let image = try #require(got.image)
        #expect(image.width == 40 && image.height == 120 && pixel(image, 39, 119) == 0xFF_27_77_C8)
        // incremental: previews while the bytes drip in, one coder instance for the download.
        // Two gates hold the drip (after its first half, before its last piece), so the
        // previews come from the bytes, not from how fast this machine runs.
        let before = PPMCoder.instances
        let mid = UUID().uuidString, last = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(mid)"); _ = s.faultGet("/open?gate=\(last)") }
        let held = patientDownloader()
        let (drip, _) = held.start(s.url(s.fault, "/drip-file?name=ppm/a.ppm&piece=1500&gap=5&mid=\(mid)&gate=\(last)"),
                                   .progressiveLoad, context)
        #expect(await eventually(600) { drip.previews.count >= 1 }, "a preview of the first half")
        let firstHalf = drip.previews.count
        _ = s.faultGet("/open?gate=\(mid)")
        #expect(await eventually(600) { drip.previews.count > firstHalf }, "a preview of more rows")
        #expect(drip.finished == 0)
        _ = s.faultGet("/open?gate=\(last)")
        await drip.wait()
        #expect(drip.image?.height == 120 && drip.finished == 1 && drip.image?.isIncremental == false)
        #expect(drip.previews.count >= 2 && drip.previews.allSatisfy { $0.isIncremental })
        #expect(PPMCoder.instances == before + 1)
        // the manager: thumbnail and transformer, then the disk cache decodes with the coder
        let (m, cache) = makeManager()
        let url = s.url(s.http, "/ppm/a.ppm?thumb")
        var ctx = context
        ctx[.imageThumbnailPixelSize] = CGSize(width: 20, height: 20)
        let thumb = try #require(await m.load(url, [], ctx).last?.image)
        #expect(thumb.width <= 20 && thumb.height == 20)
        cache.waitForPendingWrites()
        cache.clearMemory()
        // the original bytes are on disk: a full-size load decodes them with the coder
        let full = await m.load(url, [.fromCacheOnly], context)
        #expect(full.last?.type == .disk && full.last?.image?.width == 40)
        var flipped = context
        flipped[.imageTransformer] = SDImageFlippingTransformer(horizontal: true, vertical: false)
        let t = try #require(await m.load(url, [.fromCacheOnly], flipped).last?.image)
        #expect(pixel(t, 0, 0) == pixel(image, 39, 0))
    }

    @Test("test41: a store without data encodes with the context's custom coder, in its own format; the disk read decodes with it")
    func customCoderForImageCache() async throws {
        let ppm = PPMCoder()
        let image = try #require(ppm.decodedImage(with: PPMCoder.encode(width: 6, height: 4) { x, y in
            (UInt8(x * 40), UInt8(y * 60), 9) }, options: nil))
        #expect(image.format == .ppm && image.format.description == "format1000" && !image.format.isCore)
        #expect(image.format.capabilities.isEmpty && image.format.mimeType == nil)
        // the shared list does not know the format: its fallback (opaque: JPEG)
        let cache = makeCache("coder41")
        #expect(SDImageFormat(data: SDImageCache.encodedData(for: image)) == .jpeg)
        let context: SDWebImageContext = [.imageCoder: ppm]
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            cache.store(image, imageData: nil, forKey: "k41", context: context, cacheType: .disk) { error in
                #expect(error == nil)
                c.resume()
            }
        }
        let bytes = try #require(cache.diskImageData(forKey: "k41"))
        #expect(bytes.starts(with: Array("P6".utf8)))
        let back = try #require(await cache.query("k41", .disk, context: context).image)
        #expect(back.format == .ppm && back.width == 6 && pixel(back, 5, 3) == pixel(image, 5, 3))
        // without the coder the bytes are not an image we know
        #expect(await cache.query("k41", .disk).image == nil)
    }

    @Test("With a user's coder listed, a body no coder claims stops after its first bytes (not read to the limit)")
    func customListRefusesGarbage() async throws {
        let s = try #require(TestServers.shared)
        let garbage = Data(repeating: 0x41, count: 2 << 20)
        try garbage.write(to: s.www.appendingPathComponent("img/garbage.bin"))
        let list = SDImageCodersManager()
        list.addCoder(PPMCoder())
        let o = await patientDownloader().load(s.url(s.fault, "/drip-file?name=img/garbage.bin&piece=4096&gap=5"), [],
                                                  [.imageCoder: list])
        #expect(o.sdError?.code == .badImageData && o.sdError?.description.contains("no coder") == true)
        #expect((o.progressCalls.map(\.0).max() ?? 0) < garbage.count / 2)
    }

    @Test("A coder added to the shared manager is used for downloads (test22), and removing it ends that")
    func sharedManagerCoder() throws {
        // in a child process: the shared list is global, and other tests run alongside
        let s = try #require(TestServers.shared)
        try Data("SDTOY".utf8 + [5, 3, 0x42]).write(to: s.www.appendingPathComponent("img/toy.bin"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sd-toy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let child = try Child.start(["shared-coder", dir.path, s.url(s.http, "/img/toy.bin").absoluteString])
        let out = child.output()
        #expect(child.wait() == 0)
        #expect(out == "image 5x3 ff424242\nerror 1001\n")
    }

    func firstRow(_ format: String, minFrames: Int) throws -> AnimRow {
        try #require(AnimRow.load().first { $0.format == format && $0.frames >= minFrames && $0.expected.count == $0.frames })
    }
}
