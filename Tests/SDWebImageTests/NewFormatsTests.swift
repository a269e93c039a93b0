import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// HEIC and JPEG XL through the Swift layers, which have no code of their
/// own for them (each is one codec row in the C core): loaded by the
/// manager from a loopback nginx and from the disk cache, a progressive
/// JPEG XL's preview on a view before the image, a JPEG XL animation played
/// by `SDAnimatedImagePlayer`, and both written by the coders manager.
@Suite("HEIC and JPEG XL: codec rows in C, no Swift of their own", .serialized)
struct NewFormatsTests {
    let servers = TestServers.shared

    /// Smooth with fine texture, as photos are.
    static func picture(_ w: Int = 160, _ h: Int = 120, seed: UInt32 = 0) throws -> Bitmap {
        try Bitmap(width: w, height: h) { raw in
            let px = raw.bindMemory(to: UInt32.self)
            for y in 0..<h {
                for x in 0..<w {
                    let t = UInt32((x * 7 + y * 13) & 31) + seed
                    px[y * w + x] = 0xFF00_0000 | (UInt32(x * 200 / w) + t) << 16 | (UInt32(y * 200 / h) + t) << 8 | (100 + t)
                }
            }
        }
    }

    static func bytes(_ b: Bitmap) -> [UInt8] { b.withUnsafeBytes { Array($0) } }

    static var formats: [ImageFormat] {
        [.heic, .jpegXL].filter { $0.capabilities.isSuperset(of: [.decode, .encode]) }
    }

    @Test("HEIC and JPEG XL load through SDWebImageManager from nginx, then from the disk cache")
    func managerAndDisk() async throws {
        let s = try #require(servers)
        #expect(Self.formats.count == 2, "this build decodes and encodes both")
        for format in Self.formats {
            let data = try Bitmap.encode([try Self.picture()], as: format, options: EncodeOptions(quality: 90))
            let name = "img/new-format.\(format == .heic ? "heic" : "jxl")"
            try Data(data).write(to: s.www.appendingPathComponent(name))
            let want = try ImageDecoder.decode(data)
            let (m, c) = makeManager()
            let url = s.url(s.http, "/" + name + "?\(format)")
            let loaded = await m.load(url, .waitStoreCache)
            let image = try #require(loaded.last?.image, "\(format): \(String(describing: loaded.last?.error))")
            #expect(image.width == 160 && image.height == 120 && Self.bytes(image.bitmap) == Self.bytes(want.bitmap),
                    "\(format): the downloaded image is the file's decode")
            c.clearMemory()
            let disk = await m.load(url, [.fromCacheOnly])
            #expect(disk.last?.type == .disk, "\(format)")
            #expect(disk.last?.image.map { Self.bytes($0.bitmap) } == Self.bytes(want.bitmap), "\(format): from disk")
            // a thumbnail through the context key
            let thumb = await m.load(s.url(s.http, "/" + name + "?thumb-\(format)"), [],
                                     [.imageThumbnailPixelSize: CGSize(width: 40, height: 40)])
            #expect(thumb.last?.image?.width == 40 && thumb.last?.image?.height == 30, "\(format): thumbnail")
        }
    }

    @Test("A progressive JPEG XL streams onto a view: a preview first, then the image")
    func jxlPreviewOnView() async throws {
        let s = try #require(servers)
        let pic = try Self.picture(512, 384)
        let data = try Bitmap.encode([pic], as: .jpegXL, options: EncodeOptions(quality: 90, progressive: true))
        let dir = s.www.appendingPathComponent("drip-jxl")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(data).write(to: dir.appendingPathComponent("p.jxl"))
        let gate = UUID().uuidString
        defer { _ = s.faultGet("/open?gate=\(gate)") }
        let url = s.url(s.fault, "/drip-file?name=drip-jxl/p.jxl&piece=\(data.count / 12 + 1)&gap=20&gate=\(gate)")
        let m = SDWebImageManager(cache: makeCache(), loader: patientDownloader())  // the held last piece outlasts any starved step
        let view = TestImageView()
        let log = SetImageLog()
        await view.onView {
            view.sd_setImage(with: url, options: [.progressiveLoad], context: [.customManager: m], completed: log.block(view))
        }
        // all but the last piece are in: the DC pass has long been shown
        var preview: SDImage?
        for _ in 0..<10_000 {
            preview = await view.onView { view.shown.compactMap { $0 }.first { $0.isIncremental } }
            if preview != nil { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let p = try #require(preview, "a preview before the last piece")
        #expect(p.width == 512 && p.height == 384)
        _ = s.faultGet("/open?gate=\(gate)")
        await log.wait()
        let final = try #require(log.last?.image)
        let want = try ImageDecoder.decode(data)
        #expect(!final.isIncremental && Self.bytes(final.bitmap) == Self.bytes(want.bitmap))
    }

    @Test("A JPEG XL animation plays through SDAnimatedImagePlayer, every frame and duration its own")
    func jxlAnimationPlays() throws {
        let frames = try (0..<4).map { try Self.picture(48, 32, seed: UInt32($0 * 40)) }
        let delays = [100, 200, 100, 300]
        let data = try Bitmap.encode(frames, delaysMilliseconds: delays, as: .jpegXL,
                                     options: EncodeOptions(lossless: true, loopCount: 2))
        let image = try #require(SDAnimatedImage(data: Data(data)))
        #expect(image.animatedImageFrameCount == 4 && image.animatedImageLoopCount == 2)
        for i in 0..<4 {
            #expect(image.animatedImageDuration(at: UInt(i)) == Double(delays[i]) / 1000)
            #expect(image.animatedImageFrame(at: UInt(i)).map { Self.bytes($0.bitmap) } == Self.bytes(frames[i]))
        }
        let clock = SDAnimatedImageManualClock()
        let player = try #require(SDAnimatedImagePlayer(image: image, clock: clock))
        let seen = PlayLog()
        seen.attach(player)
        player.startPlaying()
        for _ in 0..<40 where player.isPlaying {
            player.waitForBufferedFrames()
            clock.advance(by: 0.1)
        }
        #expect(seen.frames == [0, 1, 2, 3, 0, 1, 2, 3] && !player.isPlaying)
    }

    @Test("The coders manager writes both, and sdimage-style round trips keep size and alpha")
    func codersManagerWrites() throws {
        let src = try SDImage(bitmap: Self.picture())
        for format in [SDImageFormat.heic, .jpegXL] where SDImageCodersManager.shared.canEncode(to: format) {
            let data = try #require(SDImageCodersManager.shared.encodedData(with: src, format: format,
                                                                            options: [.encodeCompressionQuality: 0.9]))
            let back = try SDImage.decode(data)
            #expect(back.width == 160 && back.height == 120 && back.format == format, "\(format)")
        }
    }
}
