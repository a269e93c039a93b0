import Foundation
import SDCoders

/// Pixel work shared by the transformers: 32-bit premultiplied ARGB, stride = width * 4.
enum Pixels {
    /// A new image of the same format, orientation and scale.
    static func image(_ from: SDImage, _ bitmap: Bitmap) -> SDImage {
        SDImage(bitmap: bitmap, format: from.format, orientation: from.orientation, scale: from.scale,
                sourcePixelWidth: from.sourcePixelWidth, sourcePixelHeight: from.sourcePixelHeight)
    }

    static func make(_ width: Int, _ height: Int, _ body: (UnsafeMutablePointer<UInt32>) -> Void) -> Bitmap? {
        try? Bitmap(width: width, height: height) { raw in body(raw.bindMemory(to: UInt32.self).baseAddress!) }
    }

    static func read<R>(_ b: Bitmap, _ body: (UnsafePointer<UInt32>, Int) -> R) -> R {
        b.withUnsafeBytes { raw in body(raw.bindMemory(to: UInt32.self).baseAddress!, b.bytesPerRow / 4) }
    }

    /// Copy `src` (w x h) into `dst` at (x, y), clipped.
    static func blit(_ src: Bitmap, into dst: UnsafeMutablePointer<UInt32>, _ dw: Int, _ dh: Int, at x: Int, _ y: Int) {
        read(src) { s, sStride in
            for row in 0..<src.height {
                let ty = y + row
                guard ty >= 0, ty < dh else { continue }
                for col in 0..<src.width {
                    let tx = x + col
                    if tx >= 0 && tx < dw { dst[ty * dw + tx] = s[row * sStride + col] }
                }
            }
        }
    }

    static func crop(_ b: Bitmap, x: Int, y: Int, width: Int, height: Int) -> Bitmap? {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(b.width, x + width), y1 = min(b.height, y + height)
        guard x1 > x0, y1 > y0 else { return nil }
        return read(b) { s, stride in
            make(x1 - x0, y1 - y0) { d in
                for row in 0..<(y1 - y0) {
                    (d + row * (x1 - x0)).update(from: s + (y0 + row) * stride + x0, count: x1 - x0)
                }
            }
        }
    }
}
