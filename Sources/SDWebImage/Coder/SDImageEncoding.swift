import Foundation
import SDCoders

/// Encoding with SDWebImage's encode options, for every format the C core
/// writes (its codec rows' capabilities decide: animation, alpha, quality):
/// max pixel size first, then the format's encoder at the asked quality, or
/// for a lossy format the highest quality that fits `encodeMaxFileSize` (a
/// bounded binary search).
enum SDImageEncoding {
    static func encode(_ image: SDImage, format: SDImageFormat, options: SDImageCoderOptions) throws(CoderError) -> Data {
        var format = format
        if format == .undefined { format = image.hasAlpha ? .png : .jpeg }
        // what the format's codec row says it can do: no format is named below
        let caps = format.capabilities
        guard caps.contains(.encode) else {
            throw CoderError(.unsupportedFormat, message: "no encoder for \(format.name) in this build")
        }
        var bitmap = image.bitmap
        if let box = options.pixelSize(.encodeMaxPixelSize) {
            bitmap = try fit(bitmap, inside: box)
        }
        var frames = [bitmap], delays = [0], loops = 0
        if caps.contains(.encodeAnimation), animates(image, options) {
            (frames, delays, loops) = try animation(image, first: bitmap)
        }
        if !caps.contains(.encodeAlpha) {
            let background = UInt32(truncatingIfNeeded: options.int(.encodeBackgroundColor) ?? 0xFFFFFF)
            frames = try frames.map { f throws(CoderError) in f.hasAlpha ? try flatten(f, on: background) : f }
        }
        // SDWebImage's format-named options are the parameters of every
        // format that has them (WebP's lossless is AVIF's too)
        // pixels kept in their source colours keep their profile; sRGB ones encode untagged
        var base = EncodeOptions(lossless: options.bool(.encodeWebPLossless) == true,
                                 speed: options.int(.encodeAVIFSpeed) ?? 8, loopCount: max(0, loops),
                                 iccProfile: image.iccProfile)
        base.optimizeCoding = options.bool(.encodeJPEGOptimizeCoding) == true
        let encodeAt = { (q: Int) throws(CoderError) -> [UInt8] in
            var o = base
            o.quality = q
            return try Bitmap.encode(frames, delaysMilliseconds: delays, as: format, options: o)
        }
        let quality = min(1, max(0, options.double(.encodeCompressionQuality) ?? 1))
        let q = max(1, Int((quality * 100).rounded()))
        guard caps.contains(.encodeQuality), !base.lossless, let limit = options.int(.encodeMaxFileSize), limit > 0 else {
            return Data(try encodeAt(q))
        }
        return Data(try bestFit(limit: limit, highest: q, encodeAt))
    }

    /// An animation is encoded as one unless `.encodeFirstFrameOnly` (GIF, APNG,
    /// WebP and AVIF; an AVIF sequence plays forever, whatever the loop count).
    static func animates(_ image: SDImage, _ options: SDImageCoderOptions) -> Bool {
        image.sd_isAnimated && options.bool(.encodeFirstFrameOnly) != true && image.animatedProvider != nil
    }

    /// Every frame, each fitted like the first; delays in ms; the loop count.
    static func animation(_ image: SDImage, first: Bitmap) throws(CoderError) -> ([Bitmap], [Int], Int) {
        guard let p = image.animatedProvider else { return ([first], [0], 0) }
        var frames: [Bitmap] = [], delays: [Int] = []
        for i in 0..<p.animatedImageFrameCount {
            guard let f = p.animatedImageFrame(at: i) else { throw CoderError(.corruptData, message: "frame \(i) is missing") }
            frames.append(f.width == first.width && f.height == first.height ? f.bitmap
                          : try f.bitmap.scaled(width: first.width, height: first.height))
            delays.append(Int((p.animatedImageDuration(at: i) * 1000).rounded()))
        }
        return (frames, delays, Int(p.animatedImageLoopCount))
    }

    /// The output at the highest quality in 1...highest that is at most
    /// `limit` bytes; the smallest output when none fits (SDWebImage's rule).
    static func bestFit(limit: Int, highest: Int, _ encodeAt: (Int) throws(CoderError) -> [UInt8]) throws(CoderError) -> [UInt8] {
        let top = try encodeAt(highest)
        if top.count <= limit { return top }
        var lo = 1, hi = highest - 1
        var best: [UInt8]?
        var smallest = top
        while lo <= hi {  // at most 7 encodes for 1...100
            let mid = (lo + hi) / 2
            let out = try encodeAt(mid)
            if out.count < smallest.count { smallest = out }
            if out.count <= limit {
                best = out
                lo = mid + 1
            } else {
                hi = mid - 1
            }
        }
        return best ?? smallest
    }

    /// Scaled down to fit inside `box`, aspect kept; the same bitmap if it fits.
    static func fit(_ bitmap: Bitmap, inside box: (width: Int, height: Int)) throws(CoderError) -> Bitmap {
        let bw = box.width > 0 ? box.width : Int.max, bh = box.height > 0 ? box.height : Int.max
        guard bitmap.width > bw || bitmap.height > bh else { return bitmap }
        let s = min(Double(bw) / Double(bitmap.width), Double(bh) / Double(bitmap.height))
        let w = max(1, Int((Double(bitmap.width) * s).rounded())), h = max(1, Int((Double(bitmap.height) * s).rounded()))
        return try bitmap.scaled(width: min(w, bw), height: min(h, bh))
    }

    /// Alpha composited over an opaque colour (0xRRGGBB): for formats without alpha.
    static func flatten(_ bitmap: Bitmap, on rgb: UInt32) throws(CoderError) -> Bitmap {
        let bg = [UInt32(rgb & 0xFF), UInt32((rgb >> 8) & 0xFF), UInt32((rgb >> 16) & 0xFF)]  // B, G, R
        return try Bitmap(width: bitmap.width, height: bitmap.height) { out in
            bitmap.withUnsafeBytes { src in
                let w = bitmap.width, stride = bitmap.bytesPerRow
                for y in 0..<bitmap.height {
                    for x in 0..<w {
                        let s = y * stride + x * 4, d = (y * w + x) * 4
                        let inv = 255 - UInt32(src[s + 3])
                        for c in 0..<3 {  // premultiplied: src + bg * (1 - a)
                            out[d + c] = UInt8(min(255, UInt32(src[s + c]) + (bg[c] * inv + 127) / 255))
                        }
                        out[d + 3] = 255
                    }
                }
            }
        }
    }
}
