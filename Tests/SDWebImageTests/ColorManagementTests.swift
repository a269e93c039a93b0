import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import Testing

/// Colour management through the Swift layers: a JPEG tagged Adobe RGB
/// (colord-data's profile, a test package) downloaded (decoded in the C
/// loop as it streams) and read back from the disk cache (decoded by the
/// coders): converted to sRGB by default, the stored pixels and the exact
/// profile with `.keepSource` (which keeps out of the memory cache), the
/// source's colour space reported either way.
@Suite("Colour management: the download and coder routes", .serialized)
struct ColorManagementTests {
    let servers = TestServers.shared
    static let adobe = "/usr/share/color/icc/colord/AdobeRGB1998.icc"

    /// A saturated picture, as JPEG, with `icc` in one APP2 segment after SOI.
    static func taggedJPEG(_ icc: [UInt8]) throws -> Data {
        let bitmap = try Bitmap(width: 64, height: 48) { raw in
            let px = raw.bindMemory(to: UInt32.self)
            for y in 0..<48 {
                for x in 0..<64 { px[y * 64 + x] = 0xFF00_0000 | UInt32(x * 4) << 16 | UInt32(255 - y * 5) << 8 | 40 }
            }
        }
        let jpg = try bitmap.jpegData(quality: 95)
        let len = icc.count + 16
        var out = Array(jpg[0..<2]) + [0xFF, 0xE2, UInt8(len >> 8), UInt8(len & 0xFF)]
        out += Array("ICC_PROFILE".utf8) + [0, 1, 1] + icc + Array(jpg[2...])
        return Data(out)
    }

    static func bytes(_ b: Bitmap) -> [UInt8] { b.withUnsafeBytes { Array($0) } }

    @Test("Downloaded and from disk: sRGB by default, the stored pixels and profile with .keepSource")
    func routes() async throws {
        let s = try #require(servers)
        guard let icc = FileManager.default.contents(atPath: Self.adobe).map([UInt8].init) else { return }
        let data = try Self.taggedJPEG(icc)
        try data.write(to: s.www.appendingPathComponent("img/adobe.jpg"))
        var keep = DecodeOptions()
        keep.colorManagement = .keepSource
        let stored = try ImageDecoder.decode([UInt8](data), options: keep)
        let converted = try ImageDecoder.decode([UInt8](data))
        #expect(stored.iccProfile == icc && stored.sourceColorSpace == .iccProfile)
        #expect(converted.iccProfile == nil && converted.sourceColorSpace == .iccProfile)
        #expect(Self.bytes(stored.bitmap) != Self.bytes(converted.bitmap))

        let (m, c) = makeManager()
        // downloaded: the C loop's decode sink
        let url = s.url(s.http, "/img/adobe.jpg?cm1")
        let plain = await m.load(url, .waitStoreCache)
        let p = try #require(plain.last?.image)
        #expect(Self.bytes(p.bitmap) == Self.bytes(converted.bitmap) && p.iccProfile == nil)
        let kept = await m.load(s.url(s.http, "/img/adobe.jpg?cm2"), [], [.imageColorManagement: ColorManagement.keepSource])
        let k = try #require(kept.last?.image)
        #expect(Self.bytes(k.bitmap) == Self.bytes(stored.bitmap) && k.iccProfile == icc)
        // the memory cache (keys that do not say how) is left alone: a default
        // load after it gets converted pixels, from the file's bytes on disk
        let keptURL = s.url(s.http, "/img/adobe.jpg?cm2")
        #expect(c.imageFromMemoryCache(forKey: keptURL.absoluteString) == nil)
        let after = await m.load(keptURL)
        #expect(after.last?.image.map { Self.bytes($0.bitmap) } == Self.bytes(converted.bitmap))
        // from the disk cache: the coders
        c.clearMemory()
        let disk = await m.load(url, [.fromCacheOnly], [.imageColorManagement: ColorManagement.keepSource])
        let d = try #require(disk.last?.image)
        #expect(disk.last?.type == .disk)
        #expect(Self.bytes(d.bitmap) == Self.bytes(stored.bitmap) && d.iccProfile == icc)
    }

    @Test("Encoding keeps colour honest: kept pixels encode with their profile (JPEG, PNG, WebP, AVIF), converted ones untagged")
    func encodeKeepsProfile() throws {
        guard let icc = FileManager.default.contents(atPath: Self.adobe).map([UInt8].init) else { return }
        let data = try Self.taggedJPEG(icc)
        var keep = DecodeOptions()
        keep.colorManagement = .keepSource
        let kept = try SDImage.decode(data, options: keep)
        let converted = try SDImage.decode(data)
        #expect(kept.iccProfile == icc && converted.iccProfile == nil)
        for format in [SDImageFormat.png, .webP, .jpeg, .avif] where SDImageCodersManager.shared.canEncode(to: format) {
            let lossless = format == .png || format == .webP
            let o: SDImageCoderOptions = [.encodeWebPLossless: lossless, .encodeCompressionQuality: 0.95]
            let tagged = try #require(SDImageCodersManager.shared.encodedData(with: kept, format: format, options: o))
            let again = try ImageDecoder.decode([UInt8](tagged), options: keep)
            #expect(again.iccProfile == icc && again.sourceColorSpace == .iccProfile, "\(format)")
            if lossless {  // the same stored pixels, so the same conversion, byte for byte
                #expect(Self.bytes(again.bitmap) == Self.bytes(kept.bitmap), "\(format)")
                #expect(Self.bytes(try ImageDecoder.decode([UInt8](tagged)).bitmap) == Self.bytes(converted.bitmap),
                        "\(format)")
            }
            let plain = try #require(SDImageCodersManager.shared.encodedData(with: converted, format: format, options: o))
            let back = try ImageDecoder.decode([UInt8](plain), options: keep)
            #expect(back.iccProfile == nil && back.sourceColorSpace == .sRGB, "\(format): sRGB pixels encode untagged")
        }
    }
}
