import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import Testing

/// A w x h image whose pixel (x, y) is opaque with B = x, G = y, R = 7 (an identity we can track).
func coordinateImage(_ w: Int, _ h: Int, alpha: UInt32 = 255) throws -> SDImage {
    let b = try Bitmap(width: w, height: h) { raw in
        let p = raw.bindMemory(to: UInt32.self)
        for y in 0..<h { for x in 0..<w { p[y * w + x] = alpha << 24 | 7 << 16 | UInt32(y) << 8 | UInt32(x) } }
    }
    return SDImage(bitmap: b)
}

func pixel(_ i: SDImage, _ x: Int, _ y: Int) -> UInt32 {
    i.withUnsafeBytes { $0.load(fromByteOffset: y * i.bytesPerRow + x * 4, as: UInt32.self) }
}

@Suite("Transformers (ports of SDImageTransformerTests)")
struct TransformerTests {
    @Test("Keys follow SDWebImage: transformed key before the extension; pipeline joins with -")
    func keys() {
        #expect(SDTransformedKeyForKey("http://foo/image.png?foo=bar#mark", "k") == "http://foo/image-k.png?foo=bar#mark")
        #expect(SDTransformedKeyForKey("http://foo/image", "k") == "http://foo/image-k")
        #expect(SDTransformedKeyForKey("ftp://root/image.png", "k") == "ftp://root/image-k.png")
        #expect(SDTransformedKeyForKey("image.png", "k") == "image-k.png")
        #expect(SDTransformedKeyForKey("image", "k") == "image-k")
        let p = SDImagePipelineTransformer(transformers: [SDImageFlippingTransformer(horizontal: true, vertical: false),
                                                          SDImageBlurTransformer(radius: 2)])
        #expect(p.transformerKey == "SDImageFlippingTransformer(1,0)-SDImageBlurTransformer(2.000000)")
        #expect(SDThumbnailedKeyForKey("a.jpg", CGSize(width: 10, height: 20), true) == "a-Thumbnail({10.000000,20.000000},1).jpg")
    }

    @Test("Resizing: fill, aspect fit (transparent bars), aspect fill (cropped)")
    func resizing() throws {
        let image = try coordinateImage(40, 30)
        let fill = try #require(SDImageResizingTransformer(size: CGSize(width: 20, height: 10), scaleMode: .fill)
            .transformedImage(with: image, forKey: ""))
        #expect(fill.width == 20 && fill.height == 10)
        let fit = try #require(SDImageResizingTransformer(size: CGSize(width: 100, height: 100), scaleMode: .aspectFit)
            .transformedImage(with: image, forKey: ""))
        #expect(fit.width == 100 && fit.height == 100)
        #expect(pixel(fit, 50, 5) >> 24 == 0 && pixel(fit, 50, 50) >> 24 == 255)  // 100x75 centred
        let cover = try #require(SDImageResizingTransformer(size: CGSize(width: 100, height: 100), scaleMode: .aspectFill)
            .transformedImage(with: image, forKey: ""))
        #expect(cover.width == 100 && cover.height == 100 && pixel(cover, 0, 0) >> 24 == 255 && pixel(cover, 99, 99) >> 24 == 255)
    }

    @Test("Cropping, flipping and rotating move pixels where they should")
    func geometry() throws {
        let image = try coordinateImage(40, 30)
        let crop = try #require(SDImageCroppingTransformer(rect: CGRect(x: 10, y: 5, width: 20, height: 10))
            .transformedImage(with: image, forKey: ""))
        #expect(crop.width == 20 && crop.height == 10 && pixel(crop, 0, 0) == pixel(image, 10, 5))
        #expect(SDImageCroppingTransformer(rect: CGRect(x: 50, y: 50, width: 5, height: 5)).transformedImage(with: image, forKey: "") == nil)

        let h = try #require(SDImageFlippingTransformer(horizontal: true, vertical: false).transformedImage(with: image, forKey: ""))
        #expect(pixel(h, 0, 3) == pixel(image, 39, 3))
        let v = try #require(SDImageFlippingTransformer(horizontal: false, vertical: true).transformedImage(with: image, forKey: ""))
        #expect(pixel(v, 3, 0) == pixel(image, 3, 29))

        let ccw = try #require(SDImageRotationTransformer(angle: .pi / 2).transformedImage(with: image, forKey: ""))
        #expect(ccw.width == 30 && ccw.height == 40)
        #expect(pixel(ccw, 0, 0) == pixel(image, 39, 0))  // the top-right corner turns to the top-left
        let half = try #require(SDImageRotationTransformer(angle: .pi).transformedImage(with: image, forKey: ""))
        #expect(pixel(half, 0, 0) == pixel(image, 39, 29))
        #expect(SDImageRotationTransformer(angle: 0.3).transformedImage(with: image, forKey: "") == nil)
    }

    @Test("Rounded corners clear the corners; tint recolours keeping alpha; blur spreads but keeps flat areas")
    func paint() throws {
        let image = try coordinateImage(40, 30)
        let round = try #require(SDImageRoundCornerTransformer(radius: 10).transformedImage(with: image, forKey: ""))
        #expect(pixel(round, 0, 0) == 0 && pixel(round, 20, 15) == pixel(image, 20, 15))
        let bordered = try #require(SDImageRoundCornerTransformer(radius: 5, borderWidth: 2, borderColor: .white)
            .transformedImage(with: image, forKey: ""))
        #expect(pixel(bordered, 20, 0) == 0xFFFF_FFFF && pixel(bordered, 20, 15) == pixel(image, 20, 15))

        let red = SDColor(red: 1, green: 0, blue: 0)
        let tinted = try #require(SDImageTintTransformer(color: red).transformedImage(with: image, forKey: ""))
        #expect(pixel(tinted, 5, 5) == 0xFFFF_0000)
        let clear = try coordinateImage(4, 4, alpha: 0)
        #expect(pixel(try #require(SDImageTintTransformer(color: red).transformedImage(with: clear, forKey: "")), 1, 1) >> 24 == 0)

        let dot = SDImage(bitmap: try Bitmap(width: 21, height: 21) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for i in 0..<(21 * 21) { p[i] = 0xFF00_0000 }
            p[10 * 21 + 10] = 0xFFFF_FFFF
        })
        let blurred = try #require(SDImageBlurTransformer(radius: 4).transformedImage(with: dot, forKey: ""))
        #expect(pixel(blurred, 10, 10) & 0xFF < 255 && pixel(blurred, 12, 10) & 0xFF > 0)
        #expect(pixel(blurred, 0, 0) == 0xFF00_0000)  // far away: still flat black, opaque
    }

    @Test("Through the manager: cached under the transformed key; the original kept on disk rebuilds another transform offline")
    func viaManager() async throws {
        let s = try #require(TestServers.shared, "test servers could not start")
        let (m, c) = makeManager()
        let url = s.url(s.http, "/img/small.jpg?transform")
        let flip = SDImageFlippingTransformer(horizontal: true, vertical: false)
        let log = await m.load(url, .waitStoreCache, [.imageTransformer: flip])
        let image = try #require(log.last?.image)
        #expect(image.width == 64 && log.last?.data == nil)
        let key = try #require(m.cacheKey(for: url, context: [.imageTransformer: flip]))
        #expect(key.contains("SDImageFlippingTransformer(1,0)"))
        #expect(c.imageFromMemoryCache(forKey: key) === image)
        #expect(c.diskImageDataExists(withKey: url.absoluteString))  // the original bytes, on disk only
        #expect(c.imageFromMemoryCache(forKey: url.absoluteString) == nil)

        let rotate = SDImageRotationTransformer(angle: .pi / 2)
        let offline = await m.load(url, .fromCacheOnly, [.imageTransformer: rotate])
        #expect(offline.last?.image?.width == 48 && offline.last?.type == .disk)
    }

    @Test("A resizing transformer through the manager is decoded to its size (shrinking on load): the render's pixels, from the network and from the original on disk; not when the decoded original is asked for in memory")
    func resizingFoldsIntoDecode() async throws {
        let s = try #require(TestServers.shared, "test servers could not start")
        let file = try TestServers.jpeg(width: 1200, height: 800, progressive: false)
        let name = "img/fold-\(UInt32.random(in: 0...UInt32.max)).jpg"
        try file.write(to: s.www.appendingPathComponent(name))
        let url = s.url(s.http, "/" + name)
        for mode in [SDImageScaleMode.fill, .aspectFit, .aspectFill] {
            let resize = SDImageResizingTransformer(size: CGSize(width: 120, height: 120), scaleMode: mode)
            // what the decoder makes of the source for that box: a force, a fit extended to the box, a fill
            var plan = RenderPlan(width: 120, height: 120,
                                  resizingType: mode == .fill ? .force : mode == .aspectFit ? .fit : .fill)
            plan.enlarge = true
            if mode == .aspectFit { plan.extend = .center }
            let decoded = try #require(SDImageCacheDecodeImageData(file, "ref", [], [.imageRenderPlan: plan]))
            let (m, c) = makeManager()
            let image = try #require(await m.load(url, .waitStoreCache, [.imageTransformer: resize]).last?.image)
            #expect(image.width == 120 && image.height == 120)
            #expect(image.bitmap.withUnsafeBytes { Data($0) } == decoded.bitmap.withUnsafeBytes { Data($0) })
            // from the original's bytes on disk (the transformed entry gone): the same
            await c.removeImage(forKey: try #require(m.cacheKey(for: url, context: [.imageTransformer: resize])),
                                cacheType: .all)
            c.clearMemory()
            let (m2, _) = makeManager(c)
            let again = try #require(await m2.load(url, [], [.imageTransformer: resize]).last)
            #expect(again.type == .disk)
            #expect(again.image?.bitmap.withUnsafeBytes { Data($0) } == decoded.bitmap.withUnsafeBytes { Data($0) })
            #expect(c.imageFromMemoryCache(forKey: url.absoluteString) == nil)  // never as the original
        }
        // a pipeline that starts with the resize: the rest works on the decoded box
        let flipAfter = SDImagePipelineTransformer(transformers: [
            SDImageResizingTransformer(size: CGSize(width: 120, height: 120), scaleMode: .fill),
            SDImageFlippingTransformer(horizontal: true, vertical: false)])
        var forced = RenderPlan(width: 120, height: 120, resizingType: .force)
        forced.enlarge = true
        let box = try #require(SDImageCacheDecodeImageData(file, "ref", [], [.imageRenderPlan: forced]))
        let flippedBox = try #require(SDImageFlippingTransformer(horizontal: true, vertical: false)
            .transformedImage(with: box, forKey: ""))
        let piped = try #require(await makeManager().0.load(url, [], [.imageTransformer: flipAfter]).last?.image)
        #expect(piped.bitmap.withUnsafeBytes { Data($0) } == flippedBox.bitmap.withUnsafeBytes { Data($0) })
        // the decoded original kept in memory: decoded whole, then transformed (as before)
        let resize = SDImageResizingTransformer(size: CGSize(width: 120, height: 120), scaleMode: .fill)
        let whole = try #require(SDImageCacheDecodeImageData(file, "ref", [], nil))
        let expected = try #require(resize.transformedImage(with: whole, forKey: ""))
        let (m, c) = makeManager()
        let image = try #require(await m.load(url, .waitStoreCache, [.imageTransformer: resize,
                                                                     .originalStoreCacheType: SDImageCacheType.all]).last?.image)
        #expect(image.bitmap.withUnsafeBytes { Data($0) } == expected.bitmap.withUnsafeBytes { Data($0) })
        #expect(c.imageFromMemoryCache(forKey: url.absoluteString)?.width == 1200)
    }

    @Test("originalStoreCacheType .all keeps the decoded original in memory too, as SDWebImage (issue 19); a thumbnail is never kept as the original")
    func originalInMemory() async throws {
        let s = try #require(TestServers.shared, "test servers could not start")
        let (m, c) = makeManager()
        let url = s.url(s.http, "/img/small.jpg?original-all")
        let flip = SDImageFlippingTransformer(horizontal: true, vertical: false)
        let log = await m.load(url, .waitStoreCache, [.imageTransformer: flip, .originalStoreCacheType: SDImageCacheType.all])
        let flipped = try #require(log.last?.image)
        let original = try #require(c.imageFromMemoryCache(forKey: url.absoluteString))
        #expect(original !== flipped && original.width == 64 && c.diskImageDataExists(withKey: url.absoluteString))
        #expect(pixel(original, 0, 0) == pixel(flipped, 63, 0))

        let thumbURL = s.url(s.http, "/img/small.jpg?original-thumb")
        _ = await m.load(thumbURL, .waitStoreCache, [.imageThumbnailPixelSize: CGSize(width: 16, height: 16),
                                                     .originalStoreCacheType: SDImageCacheType.all])
        #expect(c.imageFromMemoryCache(forKey: thumbURL.absoluteString) == nil)  // only the bytes, on disk
        #expect(c.diskImageDataExists(withKey: thumbURL.absoluteString))
    }
}
