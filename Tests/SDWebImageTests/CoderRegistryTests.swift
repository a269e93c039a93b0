import Foundation
import SDTestSupport
@testable import SDWebImage
import SDWebImageTestSupport
import Testing

/// PPM again, but a coder that says which format it claims (`claimedFormats`),
/// so the coders manager knows every other format stays the C core's.
final class NamedPPMCoder: SDImageCoder, @unchecked Sendable {
    private let inner = PPMCoder()
    var claimedFormats: Set<SDImageFormat>? { [.ppm] }
    func canDecode(from data: Data?) -> Bool { inner.canDecode(from: data) }
    func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? {
        inner.decodedImage(with: data, options: options)
    }
    func canEncode(to format: SDImageFormat) -> Bool { inner.canEncode(to: format) }
    func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? {
        inner.encodedData(with: image, format: format, options: options)
    }
}

@Suite("The codec registry from C to Swift, and one decode route per format")
struct CoderRegistryTests {
    static let decodable = Set(SDImageFormat.allCases.filter { $0.capabilities.contains(.decode) })

    @Test("The built-in coders are the C core's codec rows: one claims each format the core decodes, one writes each it encodes")
    func builtInsFromCapabilities() throws {
        let m = SDImageCodersManager()
        let cores = m.coders.compactMap { $0 as? SDImageCoreCoder }
        #expect(cores.count == m.coders.count)
        for f in SDImageFormat.allCases where f != .unknown {
            let caps = f.capabilities
            #expect(cores.contains { $0.decodableFormats.contains(f) } == caps.contains(.decode), "\(f)")
            #expect(m.canEncode(to: f) == caps.contains(.encode), "\(f)")
            let one = SDImageCoreCoder(format: f)
            #expect(one.decodableFormats == (caps.contains(.decode) ? [f] : []))
            #expect(one.encodableFormats == (caps.contains(.encode) ? [f] : []))
            #expect(one.claimedFormats == one.decodableFormats)
        }
        // SDWebImage's named coders keep their places
        #expect(m.coders.prefix(5).map { String(describing: type(of: $0)) }
            == ["SDImageIOCoder", "SDImageGIFCoder", "SDImageAPNGCoder", "SDImageWebPCoder", "SDImageAVIFCoder"])
    }

    @Test("Every format the core encodes goes through the coders manager and decodes back: alpha where the row keeps it")
    func encodeEveryFormat() throws {
        let m = SDImageCodersManager()
        let bitmap = try Bitmap(width: 24, height: 16) { px in
            for i in stride(from: 0, to: px.count, by: 4) {  // premultiplied B, G, R, A: transparent on the left
                let x = (i / 4) % 24
                let a: UInt8 = x < 12 ? 0 : 255
                px[i] = 0; px[i + 1] = a / 2; px[i + 2] = a; px[i + 3] = a
            }
        }
        let image = SDImage(bitmap: bitmap)
        var written = 0
        for f in SDImageFormat.allCases where f.capabilities.contains(.encode) {
            let data = try #require(m.encodedData(with: image, format: f, options: [.encodeCompressionQuality: 0.9]), "\(f)")
            #expect(SDImageFormat(data: data) == f)
            let back = try #require(m.decodedImage(with: data, options: nil), "\(f)")
            #expect(back.width == 24 && back.height == 16)
            #expect(back.hasAlpha == f.capabilities.contains(.encodeAlpha), "\(f)")
            written += 1
        }
        #expect(written == SDImageFormat.allCases.filter { $0.capabilities.contains(.encode) }.count && written >= 5)
        // a format the core only names is refused clearly
        #expect(m.encodedData(with: image, format: .heic, options: nil) == nil || SDImageFormat.heic.capabilities.contains(.encode))
    }

    @Test("Every format the core reads and writes, with no Swift of its own: encoded by the coders manager, served over HTTP, loaded by the manager, then from disk")
    func everyFormatOverHTTPAndDisk() async throws {
        let s = try #require(TestServers.shared)
        let formats = SDImageFormat.allCases.filter { $0.capabilities.isSuperset(of: [.decode, .encode]) }
        #expect(formats.count >= 6)  // JPEG, PNG, GIF, WebP, AVIF and BMP in this build
        let bitmap = try Bitmap(width: 40, height: 24) { px in
            for i in stride(from: 0, to: px.count, by: 4) {
                let x = (i / 4) % 40, y = (i / 4) / 40  // 8x8 blocks: 15 colours, exact in a GIF too
                px[i] = UInt8(x / 8 * 50); px[i + 1] = UInt8(y / 8 * 80); px[i + 2] = 200; px[i + 3] = 255
            }
        }
        let image = SDImage(bitmap: bitmap)
        try FileManager.default.createDirectory(at: s.www.appendingPathComponent("formats"), withIntermediateDirectories: true)
        let (m, cache) = makeManager()
        for f in formats {
            let data = try #require(SDImageCodersManager.shared.encodedData(with: image, format: f, options: nil), "\(f)")
            let name = "formats/picture.\(f.description)"
            try data.write(to: s.www.appendingPathComponent(name))
            let url = s.url(s.http, "/" + name)
            let net = try #require(await m.load(url).last, "\(f)")
            #expect(net.error == nil && net.type == .none, "\(f): \(String(describing: net.error))")
            #expect(net.image?.width == 40 && net.image?.height == 24 && net.image?.format == f, "\(f)")
            cache.waitForPendingWrites()
            cache.clearMemory()
            let disk = try #require(await m.load(url, [.fromCacheOnly]).last, "\(f)")
            #expect(disk.type == .disk && disk.image?.width == 40 && disk.image?.format == f, "\(f)")
            if f.capabilities.contains(.encodeQuality) { continue }
            // lossless formats give the pixels back
            #expect(disk.image.map { pixel($0, 39, 23) } == pixel(image, 39, 23), "\(f)")
        }
    }

    @Test("The formats a download streams into C: every one a built-in answers for, minus those a user's coder names")
    func streamedFormats() {
        let all = SDImageCodersManager()
        #expect(all.streamedFormats == Self.decodable.union([.unknown]))
        let named = SDImageCodersManager()
        named.addCoder(NamedPPMCoder())  // a format of its own: unrecognised data is the user's
        #expect(named.streamedFormats == Self.decodable)
        let gifToo = SDImageCodersManager()
        final class GIFOnly: SDImageCoder, @unchecked Sendable {
            var claimedFormats: Set<SDImageFormat>? { [.gif] }
            func canDecode(from data: Data?) -> Bool { false }
            func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? { nil }
            func canEncode(to format: SDImageFormat) -> Bool { false }
            func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? { nil }
        }
        gifToo.addCoder(GIFOnly())
        #expect(gifToo.streamedFormats == Self.decodable.subtracting([.gif]).union([.unknown]))
        let anything = SDImageCodersManager()
        anything.addCoder(PPMCoder())  // says nothing: it may claim any data
        #expect(anything.streamedFormats.isEmpty)
    }

    @Test("A user's coder registered for its format: a progressive JPEG still streams in C (C-side previews), its own format decodes in Swift")
    func userCoderLeavesJPEGInC() async throws {
        let s = try #require(TestServers.shared)
        let ppm = PPMCoder.encode(width: 30, height: 20) { x, y in (UInt8(x * 8), UInt8(y * 12), 99) }
        try FileManager.default.createDirectory(at: s.www.appendingPathComponent("ppm"), withIntermediateDirectories: true)
        try ppm.write(to: s.www.appendingPathComponent("ppm/route.ppm"))
        let d = patientDownloader()
        for (coder, streams) in [(NamedPPMCoder() as any SDImageCoder, true), (PPMCoder() as any SDImageCoder, false)] {
            let list = SDImageCodersManager()
            list.addCoder(coder)
            let held = HeldDrip(s, tag: "route\(streams)")
            defer { held.open() }
            let (o, token) = d.start(held.url, .progressiveLoad, [.imageCoder: list])
            #expect(await eventually(600) { !o.previews.isEmpty }, "a preview before the last piece")
            held.open()
            await o.wait()
            let op = try #require(token?.operation as? SDWebImageDownloaderOperation)
            #expect(o.image?.width == 320 && o.image?.isIncremental == false)
            #expect(op.decodesInTransfer == streams)
            let corePreviews = op.corePreviewCount
            #expect((corePreviews > 0) == streams, "C-side previews: \(corePreviews)")
            #expect(!o.previews.isEmpty)  // from C, or from the built-in progressive coder in Swift
            // the user's format: declined by the C decoder, decoded by the coder
            let p = await d.load(s.url(s.http, "/ppm/route.ppm?\(streams)"), [], [.imageCoder: list])
            let image = try #require(p.image)
            #expect(image.width == 30 && image.height == 20 && pixel(image, 29, 19) == 0xFF_E8_E4_63)
        }
    }
}
