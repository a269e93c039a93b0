import CSDCore
import Foundation
import Testing

@testable import SDCoders

/// The corpus lives beside the repository; tests that need it skip without it.
private let corpusDir: URL? = {
    if let env = ProcessInfo.processInfo.environment["SD_CORPUS_DIR"], !env.isEmpty {
        return URL(fileURLWithPath: env)
    }
    let here = URL(fileURLWithPath: #filePath)  // Tests/SDCodersTests/DecoderTests.swift
    let dir = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/corpus")
    return FileManager.default.fileExists(atPath: dir.appendingPathComponent("MANIFEST.tsv").path) ? dir : nil
}()

private func corpusFile(_ name: String) throws -> [UInt8] {
    let dir = try #require(corpusDir, "corpus not found at ../shared/corpus")
    return [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))
}

/// A photo-like bitmap made here, so these tests need no fixtures.
private func synthetic(width: Int, height: Int, alpha: Bool) throws -> Bitmap {
    try Bitmap(width: width, height: height) { buf in
        var rgba = [UInt8](repeating: 0, count: 4)
        for y in 0..<height {
            for x in 0..<width {
                rgba[0] = UInt8(x * 255 / width)
                rgba[1] = UInt8(y * 255 / height)
                rgba[2] = UInt8((x ^ y) & 0xFF)
                rgba[3] = alpha ? UInt8((x + y) & 0xFF) : 255
                sd_premultiply_rgba(rgba, buf.baseAddress!.advanced(by: (y * width + x) * 4)
                    .assumingMemoryBound(to: UInt8.self), 1)
            }
        }
    }
}

@Suite("Decoding through the Swift wrapper")
struct DecoderTests {
    @Test("Swift and C decode the same corpus files to the same pixels")
    func parityWithC() throws {
        guard corpusDir != nil else { return }
        for name in ["exif-orientation/Landscape_5.jpg", "pngsuite/basi6a16.png", "jpeg/mozilla/jpg-cmyk-2.jpg",
                     "jpeg/jpeg-decoder/progressive3.jpg"] {
            let bytes = try corpusFile(name)
            // Given the C one-shot decode
            var c: OpaquePointer?
            #expect(sd_decode(bytes, bytes.count, &c) == 0)
            defer { sd_bitmap_free(c) }
            // When the same bytes go through ImageDecoder in odd chunks
            let decoder = try ImageDecoder()
            var pos = 0, pushes = 0
            while pos < bytes.count {
                let n = min(777, bytes.count - pos)
                try decoder.push(Array(bytes[pos..<pos + n]))
                pushes += 1
                // a snapshot now and then (each renders the whole image so far:
                // after every push it was most of this test's time under TSan)
                if pushes % 8 == 1 { _ = try decoder.snapshot() }
                pos += n
            }
            let image = try decoder.finish()
            // Then the pixels are identical
            #expect(image.bitmap.width == Int(sd_bitmap_width(c)))
            #expect(image.bitmap.height == Int(sd_bitmap_height(c)))
            let same = image.bitmap.withUnsafeBytes { memcmp($0.baseAddress!, sd_bitmap_pixels(c)!, $0.count) == 0 }
            #expect(same, "\(name)")
            #expect(image.isComplete)
        }
    }

    @Test("Header facts and orientation are reported")
    func headerFacts() throws {
        guard corpusDir != nil else { return }
        let bytes = try corpusFile("exif-orientation/Portrait_8.jpg")
        let image = try ImageDecoder.decode(bytes, options: .thumbnail(maxPixelSize: 180))
        #expect(image.format == .jpeg)
        #expect(image.orientation == 8)
        #expect(image.sourceWidth == 1800 && image.sourceHeight == 1200)
        #expect(image.bitmap.width == 120 && image.bitmap.height == 180)
        var reportOnly = DecodeOptions.thumbnail(maxPixelSize: 180)
        reportOnly.applyOrientation = false
        let stored = try ImageDecoder.decode(bytes, options: reportOnly)
        #expect(stored.bitmap.width == 180 && stored.bitmap.height == 120)
    }

    @Test("Errors carry the C status and the codec's message")
    func errors() throws {
        let html = Array("<html><body>Not Found</body></html>".utf8)
        #expect(throws: CoderError.self) { try ImageDecoder.decode(html) }
        do {
            _ = try ImageDecoder.decode(html)
        } catch {
            #expect(error.code == .unsupportedFormat)
            // every format this build decodes is named, from the C registry
            #expect(error.message.contains("unsupported format: not a JPEG, PNG, "))
            for f in ImageFormat.allCases where f.capabilities.contains(.decode) {
                #expect(error.message.contains(f.name), "\(f.name)")
            }
        }
        do {
            _ = try ImageDecoder.decode([0xFF, 0xD8, 0xFF, 0xE0])
            Issue.record("a cut header must fail")
        } catch {
            #expect(error.code == .truncatedHeader)
        }
        var small = DecodeOptions()
        small.maxPixels = 100
        let png = try synthetic(width: 20, height: 20, alpha: false).pngData()
        do {
            _ = try ImageDecoder.decode(png, options: small)
            Issue.record("limit must apply")
        } catch {
            #expect(error.code == .imageTooLarge)
        }
    }

    @Test("Truncated data yields a full-size image flagged incomplete")
    func truncated() throws {
        let jpeg = try synthetic(width: 120, height: 90, alpha: false).jpegData(quality: 80)
        let image = try ImageDecoder.decode(Array(jpeg[0..<jpeg.count * 2 / 3]))
        #expect(!image.isComplete)
        #expect(image.bitmap.width == 120 && image.bitmap.height == 90)
    }

    @Test("One format enum: the Swift mirror matches the C registry; known-but-undecodable formats are named")
    func formatRegistry() throws {
        #expect(ImageFormat.allCases.count == Int(SD_FORMAT_ICO.rawValue) + 1)
        for f in ImageFormat.allCases where f != .unknown {
            #expect(f.mimeType?.hasPrefix("image/") == true)
            #expect(!f.name.isEmpty && f.name != "unknown")
            // SVG too: the test bundle links SDWebImageSVGCoder (SVGCoderTests
            // shows a process without it refusing SVG)
            #expect(f.capabilities.contains(.decode) == [.jpeg, .png, .gif, .webP, .avif, .heic, .jpegXL, .bmp, .svg].contains(f))
        }
        #expect(ImageFormat.jpeg.capabilities.contains([.decode, .incremental, .scanPreviews, .encode]))
        #expect(ImageFormat.webP.description == "webp" && ImageFormat.jpegXL.description == "jpegxl")
        // file extensions: name, MIME subtype, or a short form
        let exts: [(String, ImageFormat?)] = [("JPG", .jpeg), ("jpeg", .jpeg), ("png", .png), ("webp", .webP),
                                              ("avif", .avif), ("gif", .gif), ("heic", .heic), ("HEIF", .heic), ("jxl", .jpegXL),
                                              ("bmp", .bmp), ("tif", .tiff), ("svg", .svg), ("ico", .ico),
                                              ("txt", nil), ("", nil), ("unknown", nil)]
        for (ext, want) in exts { #expect(ImageFormat(fileExtension: ext) == want, "\(ext)") }
        #expect(ImageFormat.gif.capabilities.contains([.decode, .incremental, .animation]))
        let tiff: [UInt8] = Array("II*".utf8) + [0, 8, 0, 0, 0, 0, 0, 0, 0]
        #expect(ImageFormat(sniffing: tiff.withUnsafeBytes { $0 }) == .tiff)
        do {
            _ = try ImageDecoder.decode(tiff)
            Issue.record("TIFF has no decoder")
        } catch {
            #expect(error.code == .unsupportedFormat)
            #expect(error.message.contains("TIFF"))
        }
    }

    @Test("Encoders round-trip through the decoder")
    func encodeRoundTrip() throws {
        let src = try synthetic(width: 40, height: 30, alpha: true)
        let png = try src.pngData()
        #expect(ImageFormat(sniffing: png.withUnsafeBytes { $0 }) == .png)
        let back = try ImageDecoder.decode(png).bitmap
        #expect(back.hasAlpha)
        #expect(back.width == 40 && back.height == 30)
        let jpeg = try src.jpegData(quality: 90, progressive: true)
        let decoded = try ImageDecoder.decode(jpeg)
        #expect(decoded.isProgressive)
        #expect(!decoded.bitmap.hasAlpha)
    }

    @Test("Frame model on a still image: one frame, no timing, plays once; DecodeOptions maps every field to C")
    func stillFrames() throws {
        let png = try synthetic(width: 40, height: 30, alpha: true).pngData()
        var o = DecodeOptions.thumbnail(maxPixelSize: 20)
        o.firstFrameOnly = true
        o.maxFrames = 7
        let keys = Set(o.coreParameters.map { $0.0.rawValue })
        #expect(keys.contains(SD_DEC_FIRST_FRAME_ONLY.rawValue) && keys.contains(SD_DEC_MAX_FRAMES.rawValue))
        #expect(o.coreParameters.first { $0.0 == SD_DEC_MAX_FRAMES }?.1 == 7)
        let d = try ImageDecoder(options: o)
        #expect(d.frameCount == 0 && d.loopCount == nil)
        try d.push(png)
        #expect(d.loopCount == 1 && d.isAnimated == false)
        #expect(try d.frame(at: 0) == nil)              // a still's frame comes with the end of input
        try d.endInput()
        #expect(d.frameCount == 1 && d.frameDuration(at: 0) == 0 && d.frameDuration(at: 1) == nil)
        #expect(try d.frame(at: 1) == nil)
        let frame = try #require(try d.frame(at: 0))
        let decoded = try d.finish()
        #expect(decoded.frameCount == 1 && decoded.loopCount == 1 && !decoded.isAnimated)
        #expect(frame.width == 20 && frame.height == 15)
        #expect(frame.withUnsafeBytes { Array($0) } == decoded.bitmap.withUnsafeBytes { Array($0) })
        #expect(throws: CoderError.self) { try d.frame(at: 0) } // handed over by finish
    }

    @Test("Lent frames (withFrame) equal the frames given, at the output size, without a copy")
    func lentFrames() throws {
        let frames = try (0..<3).map { i in
            try Bitmap(width: 16, height: 8) { buf in
                for p in stride(from: 0, to: buf.count, by: 4) { // opaque grey levels: one per frame
                    buf[p] = UInt8(40 + 80 * i); buf[p + 1] = UInt8(40 + 80 * i); buf[p + 2] = UInt8(40 + 80 * i)
                    buf[p + 3] = 255
                }
            }
        }
        let gif = try Bitmap.gifData(frames: frames, delaysMilliseconds: [50, 50, 50], loopCount: 0)
        var o = DecodeOptions()
        o.frameCacheBytes = 0
        let d = try ImageDecoder(options: o)
        try d.push(gif)
        try d.endInput()
        #expect(d.frameCount == 3)
        var lent: [[UInt8]] = []
        for i in 0..<3 {
            let given = try #require(try d.frame(at: i))
            let got = try #require(try d.withFrame(at: i) { f -> [UInt8] in
                #expect(f.width == 16 && f.height == 8 && f.bytesPerRow >= 64)
                return Array(f.bytes)
            })
            #expect(got == given.withUnsafeBytes { Array($0) })
            lent.append(got)
        }
        #expect(Set(lent).count == 3)
        // no copy: frame 0 lent is the decoder's canvas, which asking for
        // frame 1 draws on (a caller must not do this; the test looks)
        let seen = try d.withFrame(at: 0) { f -> ([UInt8], [UInt8]) in
            let before = Array(f.bytes)
            _ = try? d.frame(at: 1)
            return (before, Array(f.bytes))
        }
        #expect(seen?.0 == lent[0] && seen?.1 == lent[1])
        #expect(try d.withFrame(at: 3) { _ in 0 } == nil)
        #expect(try d.withFrame(at: -1) { _ in 0 } == nil)

        let small = try ImageDecoder(options: .thumbnail(maxPixelSize: 8))
        try small.push(gif)
        try small.endInput()
        let size = try small.withFrame(at: 2) { ($0.width, $0.height) }
        #expect(size?.0 == 8 && size?.1 == 4)
        let thumb = try #require(try small.frame(at: 2))
        #expect(try small.withFrame(at: 2) { Array($0.bytes) } == thumb.withUnsafeBytes { Array($0) })
    }

    @Test("Progressive previews arrive as scans complete")
    func progressivePreviews() throws {
        let jpeg = try synthetic(width: 256, height: 192, alpha: false).jpegData(quality: 90, progressive: true)
        var options = DecodeOptions()
        options.progressivePreviews = true
        options.previewIntervalMilliseconds = 0
        let decoder = try ImageDecoder(options: options)
        var previews = 0
        for start in stride(from: 0, to: jpeg.count, by: 400) {
            try decoder.push(Array(jpeg[start..<min(start + 400, jpeg.count)]))
            if decoder.previewCount > previews {
                previews = decoder.previewCount
                let snap = try #require(try decoder.snapshot())
                #expect(snap.width == 256 && snap.height == 192)
            }
        }
        #expect(previews >= 3)
        #expect(decoder.completedScans >= 5)
        let final = try decoder.finish()
        #expect(final.isComplete && final.isProgressive)
    }

    @Test("Bitmap transforms: scale and orientation")
    func transforms() throws {
        let src = try synthetic(width: 30, height: 20, alpha: false)
        let rotated = try src.oriented(6)
        #expect(rotated.width == 20 && rotated.height == 30)
        let small = try src.scaled(width: 15, height: 10)
        #expect(small.width == 15 && small.cost == 15 * 10 * 4)
    }
}
