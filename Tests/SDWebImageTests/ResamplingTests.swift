import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import Testing

/// Every path that scales goes through the C core's one resampler
/// (`sd_bitmap_resample`, checked against a double-precision reference in
/// c.resample): each path's pixels here equal the core's own, decoded or
/// resampled with the same `Resampling`, byte for byte; and the choice of
/// filter reaches each path (another filter, other pixels).
@Suite("Resampling: every scaling path through the one resampler", .serialized)
struct ResamplingTests {
    let servers = TestServers.shared

    /// A picture with detail at every scale (rings, stripes), so filters differ.
    static func detailed(_ w: Int, _ h: Int, alpha: Bool = false) throws -> Bitmap {
        try Bitmap(width: w, height: h) { raw in
            let px = raw.bindMemory(to: UInt32.self)
            for y in 0..<h {
                for x in 0..<w {
                    let dx = Double(x) - Double(w) / 2, dy = Double(y) - Double(h) / 2
                    let v = UInt32(127.5 + 127.5 * cos((dx * dx + dy * dy) / Double(w) * .pi))
                    let a: UInt32 = alpha ? UInt32((x * 255) / max(1, w - 1)) : 255
                    let c = (v * a + 127) / 255
                    px[y * w + x] = a << 24 | c << 16 | ((UInt32(x % 3 == 0 ? 255 : 0) * a + 127) / 255) << 8 | c
                }
            }
        }
    }

    static func bytes(_ b: Bitmap) -> [UInt8] { b.withUnsafeBytes { Array($0) } }

    static func decoded(_ data: Data, _ configure: (inout DecodeOptions) -> Void) throws -> Bitmap {
        var o = DecodeOptions()
        configure(&o)
        return try ImageDecoder.decode([UInt8](data), options: o).bitmap
    }

    @Test("A thumbnail downloaded, from disk and scaled down: the core's pixels for the filter asked; the key says the filter")
    func managerPaths() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let base = s.url(s.http, "/img/big.jpg?rs0")
        _ = await m.load(base, .waitStoreCache)
        let data = try #require(c.diskImageData(forKey: base.absoluteString))
        let box = CGSize(width: 100, height: 100)

        // downloaded (decoded as the bytes stream in, in the C loop)
        let lanczos = await m.load(s.url(s.http, "/img/big.jpg?rs1"), [], [.imageThumbnailPixelSize: box])
        let boxed = await m.load(s.url(s.http, "/img/big.jpg?rs2"), [],
                                 [.imageThumbnailPixelSize: box, .imageResampling: Resampling.fast])
        let a = try #require(lanczos.last?.image), b = try #require(boxed.last?.image)
        #expect(a.width == 100 && a.height == 75 && b.width == 100)
        #expect(Self.bytes(a.bitmap) == Self.bytes(try Self.decoded(data) { $0.thumbnailPixelSize = (100, 100) }))
        #expect(Self.bytes(b.bitmap) == Self.bytes(try Self.decoded(data) {
            $0.thumbnailPixelSize = (100, 100)
            $0.resampling = .fast
        }))
        #expect(Self.bytes(a.bitmap) != Self.bytes(b.bitmap))

        // from the disk cache (decoded by the coders), another filter, its own key
        c.clearMemory()
        let ctx: SDWebImageContext = [.imageThumbnailPixelSize: box, .imageResampling: Resampling.Filter.mitchell]
        let disk = await m.load(base, [.fromCacheOnly, .waitStoreCache], ctx)
        let d = try #require(disk.last?.image)
        #expect(disk.last?.type == .disk)
        #expect(Self.bytes(d.bitmap) == Self.bytes(try Self.decoded(data) {
            $0.thumbnailPixelSize = (100, 100)
            $0.resampling = Resampling(filter: .mitchell)
        }))
        let key = try #require(m.cacheKey(for: base, context: ctx))
        #expect(key.contains("Thumbnail({100.000000,100.000000},1)") && key.contains("Resampling(mitchell)"))
        let plain = try #require(m.cacheKey(for: base, context: [.imageThumbnailPixelSize: box]))
        #expect(!plain.contains("Resampling"))  // the default keeps SDWebImage's key

        // scaled down to a byte budget
        let limited = await m.load(s.url(s.http, "/img/big.jpg?rs3"), .scaleDownLargeImages,
                                   [.imageScaleDownLimitBytes: 200_000, .imageResampling: Resampling.Filter.catmullRom])
        let l = try #require(limited.last?.image)
        #expect(l.cost <= 200_000)
        #expect(Self.bytes(l.bitmap) == Self.bytes(try Self.decoded(data) {
            $0.scaleDownLimitBytes = 200_000
            $0.resampling = Resampling(filter: .catmullRom)
        }))
    }

    @Test("SDImageResizingTransformer: fill, aspect fit and aspect fill, down and up, are Bitmap.scaled's pixels")
    func resizingTransformer() throws {
        let src = try Self.detailed(301, 203, alpha: true)
        let image = SDImage(bitmap: src)
        for resampling in [Resampling.default, Resampling(filter: .bilinear), Resampling(filter: .box)] {
            // fill: exactly the resampler's output
            for (w, h) in [(97, 41), (640, 480), (301, 50)] {
                let t = SDImageResizingTransformer(size: CGSize(width: w, height: h), scaleMode: .fill, resampling: resampling)
                let out = try #require(t.transformedImage(with: image, forKey: "k"))
                #expect(Self.bytes(out.bitmap) == Self.bytes(try src.scaled(width: w, height: h, resampling: resampling)))
            }
            // aspect fit: the scaled picture centred in transparent bars
            let fit = SDImageResizingTransformer(size: CGSize(width: 200, height: 200), scaleMode: .aspectFit,
                                                 resampling: resampling)
            let fitted = try #require(fit.transformedImage(with: image, forKey: "k"))
            let inner = try src.scaled(width: 200, height: 135, resampling: resampling)
            let row = 200 * 4, top = (200 - 135) / 2
            let all = Self.bytes(fitted.bitmap), want = Self.bytes(inner)
            #expect(all[(top * row)..<((top + 135) * row)].elementsEqual(want))
            #expect(all[0..<(top * row)].allSatisfy { $0 == 0 })
            // aspect fill, enlarging: the middle of the scaled picture
            let fill = SDImageResizingTransformer(size: CGSize(width: 700, height: 300), scaleMode: .aspectFill,
                                                  resampling: resampling)
            let filled = try #require(fill.transformedImage(with: image, forKey: "k"))
            let big = Self.bytes(try src.scaled(width: 700, height: 472, resampling: resampling))
            let y0 = (472 - 300) / 2
            #expect(Self.bytes(filled.bitmap).elementsEqual(big[(y0 * 700 * 4)..<((y0 + 300) * 700 * 4)]))
        }
        let plain = SDImageResizingTransformer(size: CGSize(width: 10, height: 20), scaleMode: .fill)
        #expect(plain.transformerKey == "SDImageResizingTransformer({10.000000,20.000000},0)")
        let boxKey = SDImageResizingTransformer(size: CGSize(width: 10, height: 20), scaleMode: .fill,
                                                resampling: .fast).transformerKey
        #expect(boxKey == "SDImageResizingTransformer({10.000000,20.000000},0,box,margin=1)")
        // filters differ where there is detail
        #expect(try Self.bytes(src.scaled(width: 97, height: 41)) != Self.bytes(src.scaled(width: 97, height: 41, resampling: .fast)))
    }

    @Test("An animation's frames at a thumbnail size are its full frames through the resampler")
    func animationFrames() throws {
        // three different frames: the rings of wider pictures, brought to one size
        let distinct = try [160, 200, 240].map { w in try Self.detailed(w, w * 3 / 4).scaled(width: 160, height: 120) }
        let gif = Data(try Bitmap.encode(distinct, delaysMilliseconds: [100, 100, 100], as: .gif))
        let full = try #require(SDAnimatedImage(data: gif))
        let thumb = try #require(SDAnimatedImage(data: gif, options: [.decodeThumbnailPixelSize: CGSize(width: 64, height: 64)]))
        #expect(thumb.animatedImageFrameCount == 3 && thumb.width == 64 && thumb.height == 48)
        for i in 0..<UInt(3) {
            let f = try #require(full.animatedImageFrame(at: i)), t = try #require(thumb.animatedImageFrame(at: i))
            #expect(Self.bytes(t.bitmap) == Self.bytes(try f.bitmap.scaled(width: 64, height: 48)), "frame \(i)")
        }
        // and a player shows those frames
        let player = try #require(SDAnimatedImagePlayer(provider: thumb))
        player.seekToFrame(at: 2, loopCount: 0)
        player.waitForBufferedFrames()  // decoded now: a second seek shows it at once
        player.seekToFrame(at: 2, loopCount: 0)
        let shown = try #require(player.currentFrame)
        #expect(Self.bytes(shown.bitmap) == Self.bytes(try #require(thumb.animatedImageFrame(at: 2)).bitmap))
    }
}
