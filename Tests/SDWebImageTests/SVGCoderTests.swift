import Foundation
import SDCoders
import SDTestSupport
import SDWebImage
import SDWebImageSVGCoder
import Testing

/// SVG through the optional `SDWebImageSVGCoder` product: linked into this
/// test process, it plugs the C core's SVG row in, and the Swift layers
/// (which have no SVG code) render it — through the manager from a loopback
/// nginx and from the disk cache, at `.imageThumbnailPixelSize` (up and
/// down), stretched without aspect. A process that does not link the
/// product (SDCacheStress) recognises SVG and refuses it.
@Suite("SVG: an optional product that adds a codec row", .serialized)
struct SVGCoderTests {
    let servers = TestServers.shared

    static let logo = Data("""
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="64" height="32" viewBox="0 0 64 32">
          <rect x="1" y="1" width="62" height="30" rx="6" fill="#2060c0"/>
          <circle cx="20" cy="16" r="10" fill="#ffcc00" fill-opacity="0.7"/>
          <path d="M36 8 L58 8 L47 26 Z" fill="#e03030"/>
        </svg>
        """.utf8)

    static func bytes(_ b: Bitmap) -> [UInt8] { b.withUnsafeBytes { Array($0) } }

    @Test("Linking SDWebImageSVGCoder adds SVG to the coders manager; a process without it refuses SVG by name")
    func registeredOnlyWhenLinked() throws {
        #expect(SDImageSVGCoder.isAvailable)
        #expect(ImageFormat.svg.capabilities.contains(.decode) && !ImageFormat.svg.capabilities.contains(.encode))
        #expect(SDImageCodersManager.shared.coders.contains { ($0 as? SDImageCoreCoder)?.decodableFormats.contains(.svg) == true })
        #expect(SDImageSVGCoder.shared.decodableFormats == [.svg])
        #expect(SDImageCodersManager.shared.decodedImage(with: Self.logo, options: nil)?.width == 64)
        // SDCacheStress links SDWebImage but not SDWebImageSVGCoder
        guard FileManager.default.isExecutableFile(atPath: Child.binary) else {
            Issue.record("SDCacheStress not built at \(Child.binary)")
            return
        }
        let child = try Child.start(["svg", NSTemporaryDirectory() + "sd-svg-\(getpid())"])
        let out = child.output()
        #expect(child.wait() == 0)
        #expect(out.contains("svg decode capability: false"), "\(out)")
        #expect(out.contains("sniffed: svg"), "\(out)")
        #expect(out.contains("error:") && out.contains("SVG"), "\(out)")
    }

    @Test("An SVG loads through SDWebImageManager from nginx and the disk cache, rendered at the thumbnail size asked for")
    func managerThumbnailAndDisk() async throws {
        let s = try #require(servers)
        try Self.logo.write(to: s.www.appendingPathComponent("img/logo.svg"))
        let url = s.url(s.http, "/img/logo.svg")
        let (m, c) = makeManager()
        let natural = await m.load(url, .waitStoreCache)
        let image = try #require(natural.last?.image, "\(String(describing: natural.last?.error))")
        let want = try ImageDecoder.decode(Array(Self.logo))
        #expect(image.width == 64 && image.height == 32 && Self.bytes(image.bitmap) == Self.bytes(want.bitmap))
        #expect(image.format == .svg)
        c.clearMemory()
        let disk = await m.load(url, [.fromCacheOnly])
        #expect(disk.last?.type == .disk)
        #expect(disk.last?.image.map { Self.bytes($0.bitmap) } == Self.bytes(want.bitmap))
        // a box larger than the document: drawn at that size, not scaled up from 64 px
        var big = DecodeOptions()
        big.thumbnailPixelSize = (width: 256, height: 256)
        let sharp = try ImageDecoder.decode(Array(Self.logo), options: big)
        let up = await m.load(s.url(s.http, "/img/logo.svg?up"), [], [.imageThumbnailPixelSize: CGSize(width: 256, height: 256)])
        let upImage = try #require(up.last?.image)
        #expect(upImage.width == 256 && upImage.height == 128)
        #expect(Self.bytes(upImage.bitmap) == Self.bytes(sharp.bitmap), "rendered at 256, as the decoder renders it")
        let blurred = try want.bitmap.scaled(width: 256, height: 128)
        #expect(Self.bytes(upImage.bitmap) != Self.bytes(blurred), "not the 64 px rendering scaled up")
        // smaller, and stretched when the aspect is not kept
        let down = await m.load(s.url(s.http, "/img/logo.svg?down"), [], [.imageThumbnailPixelSize: CGSize(width: 16, height: 16)])
        #expect(down.last?.image?.width == 16 && down.last?.image?.height == 8)
        let fill = await m.load(s.url(s.http, "/img/logo.svg?fill"), [],
                                [.imageThumbnailPixelSize: CGSize(width: 40, height: 40), .imagePreserveAspectRatio: false])
        #expect(fill.last?.image?.width == 40 && fill.last?.image?.height == 40)
    }

    @Test("A hostile SVG is an error, never a crash: a data: URL outside an image, too many elements, no size")
    func hostileDocuments() throws {
        let data = Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><use href="data:image/svg+xml,x"/></svg>"#.utf8)
        #expect(throws: CoderError.self) { try ImageDecoder.decode(Array(data)) }
        var many = #"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4">"#
        many += String(repeating: "<g/>", count: 200_001) + "</svg>"
        #expect(throws: CoderError.self) { try ImageDecoder.decode(Array(many.utf8)) }
        #expect(SDImageCodersManager.shared.decodedImage(with: Data(many.utf8), options: nil) == nil)
    }
}
