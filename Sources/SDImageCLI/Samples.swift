import ArgumentParser
import Foundation
import SDWebImage

/// `sdimage samples`: test images of our own (nothing large is committed):
/// photo-like JPEGs, baseline and progressive, PNGs with alpha, JPEGs
/// with an EXIF orientation, and animated GIFs and WebPs.
struct Samples: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate sample images: photo-like JPEGs (baseline, progressive), PNGs with alpha, EXIF-rotated JPEGs, animated GIFs and WebPs.")

    @Option(help: "Folder to write to (created).")
    var out: String

    @Option(help: "How many images.")
    var count = 24

    @Option(help: "Longest side of the largest images, in pixels.")
    var maxSize = 1600

    @Option(help: "Animated samples besides them (GIF and WebP in turn).")
    var animated = 4

    func validate() throws {
        if count <= 0 { throw ValidationError("--count must be positive") }
        if maxSize < 64 { throw ValidationError("--max-size must be at least 64") }
        if animated < 0 { throw ValidationError("--animated must not be negative") }
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var total = 0
        for i in 0..<count + animated {
            let (name, data) = i < count ? try Self.sample(i, maxSize: maxSize) : try Self.animation(i - count)
            try data.write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
            total += data.count
        }
        print("samples: \(count) images and \(animated) animations, \(total / 1024) KiB in \(out)")
    }

    /// Animation `i`: a disc circling over a photo-like field, 16 frames of
    /// 80 ms, looping forever; even i a GIF, odd i a WebP (lossy).
    static func animation(_ i: Int) throws -> (String, Data) {
        let w = 320 - (i % 3) * 40, h = 240
        let field = try photo(width: w, height: h, seed: UInt32(1000 + i), alpha: false)
        let frames = try (0..<16).map { f in
            let angle = Double(f) / 16 * 2 * Double.pi
            let cx = Double(w) / 2 + cos(angle) * Double(w) / 3.5, cy = Double(h) / 2 + sin(angle) * Double(h) / 3.5
            let radius = Double(h) / 7, colour: UInt32 = i % 2 == 0 ? 0xFFF5_C518 : 0xFF18_A0F5
            return try Bitmap(width: w, height: h) { raw in
                let d = raw.bindMemory(to: UInt32.self)
                field.withUnsafeBytes { src in
                    let s = src.bindMemory(to: UInt32.self), stride = field.bytesPerRow / 4
                    for y in 0..<h {
                        for x in 0..<w {
                            let dx = Double(x) - cx, dy = Double(y) - cy
                            d[y * w + x] = dx * dx + dy * dy <= radius * radius ? colour : s[y * stride + x]
                        }
                    }
                }
            }
        }
        let delays = [Int](repeating: 80, count: frames.count)
        if i % 2 == 0 {
            return (String(format: "anim-%03d.gif", i), Data(try Bitmap.gifData(frames: frames, delaysMilliseconds: delays, loopCount: 0)))
        }
        return (String(format: "anim-%03d.webp", i),
                Data(try Bitmap.webpAnimationData(frames: frames, delaysMilliseconds: delays, loopCount: 0, quality: 80)))
    }

    /// Sample `i`: kind and size cycle so any count gets a mix.
    static func sample(_ i: Int, maxSize: Int) throws -> (String, Data) {
        let sizes = [(4, 3), (3, 2), (16, 9), (1, 1), (3, 4)]
        let (aw, ah) = sizes[i % sizes.count]
        let longest = max(64, maxSize - (i * 97) % max(1, maxSize / 2))
        let w = aw >= ah ? longest : longest * aw / ah, h = aw >= ah ? longest * ah / aw : longest
        let kind = i % 4
        let bitmap = try photo(width: w, height: h, seed: UInt32(i + 1), alpha: kind == 2)
        switch kind {
        case 0: return (String(format: "photo-%03d.jpg", i), Data(try bitmap.jpegData(quality: 85)))
        case 1: return (String(format: "progressive-%03d.jpg", i), Data(try bitmap.jpegData(quality: 85, progressive: true)))
        case 2: return (String(format: "alpha-%03d.png", i), Data(try bitmap.pngData()))
        default:
            // stored turned a quarter, tagged so it displays upright (EXIF 6 or 8)
            let orientation = i % 8 == 3 ? 6 : 8
            let stored = try bitmap.oriented(orientation == 6 ? 8 : 6)
            return (String(format: "exif%d-%03d.jpg", orientation, i),
                    withOrientation(Data(try stored.jpegData(quality: 85)), orientation))
        }
    }

    /// Smooth colour fields, soft discs and a little grain: compresses like a photo.
    static func photo(width w: Int, height h: Int, seed: UInt32, alpha: Bool) throws -> Bitmap {
        var state = seed &* 2654435761
        func rnd() -> UInt32 { state ^= state << 13; state ^= state >> 17; state ^= state << 5; return state }
        let discs = (0..<6).map { _ in (Double(rnd() % UInt32(w)), Double(rnd() % UInt32(h)),
                                        Double(w / 8 + Int(rnd() % UInt32(max(1, w / 4)))), rnd()) }
        let phase = Double(rnd() % 628) / 100
        return try Bitmap(width: w, height: h) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for y in 0..<h {
                for x in 0..<w {
                    let fx = Double(x) / Double(w), fy = Double(y) / Double(h)
                    var r = 0.55 + 0.35 * sin(fx * 3.1 + phase), g = 0.45 + 0.3 * cos(fy * 2.3 + phase)
                    var b = 0.5 + 0.3 * sin((fx + fy) * 4 + phase)
                    for (cx, cy, radius, color) in discs {
                        let d = ((Double(x) - cx) * (Double(x) - cx) + (Double(y) - cy) * (Double(y) - cy)).squareRoot()
                        let t = max(0, 1 - d / radius) * 0.6
                        r += t * (Double(color & 255) / 255 - r)
                        g += t * (Double((color >> 8) & 255) / 255 - g)
                        b += t * (Double((color >> 16) & 255) / 255 - b)
                    }
                    let grain = Double(Int(rnd() % 9) - 4) / 255
                    var a = 1.0
                    if alpha {  // a soft round window: transparent corners
                        let d = ((fx - 0.5) * (fx - 0.5) + (fy - 0.5) * (fy - 0.5)).squareRoot()
                        a = min(1, max(0, (0.5 - d) * 10))
                    }
                    func c(_ v: Double) -> UInt32 { UInt32(min(255, max(0, (v + grain) * 255 * a))) }
                    p[y * w + x] = UInt32(a * 255) << 24 | c(r) << 16 | c(g) << 8 | c(b)
                }
            }
        }
    }

    /// Insert an EXIF APP1 with one tag (orientation) after SOI / JFIF APP0.
    static func withOrientation(_ jpeg: Data, _ orientation: Int) -> Data {
        var at = 2
        if jpeg.count > 6, jpeg[2] == 0xFF, jpeg[3] == 0xE0 { at = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5])) }
        let tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,   // "II*", IFD0 at 8
                             0x01, 0x00,                                         // one entry
                             0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00,     // 0x0112 SHORT x1
                             UInt8(orientation), 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00]                             // no next IFD
        let payload: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let len = payload.count + 2
        var out = Data(jpeg[..<at])
        out.append(contentsOf: [0xFF, 0xE1, UInt8(len >> 8), UInt8(len & 255)] + payload)
        out.append(jpeg[at...])
        return out
    }
}
