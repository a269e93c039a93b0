import CSDCore

/// How pixels are resampled to a new size: the C core's one resampler
/// (`sd_bitmap_resample`, `SD_DEC_RESAMPLE_*`), used by every path that
/// scales — thumbnails while decoding, the scale-down budget, animation
/// frames, `Bitmap.scaled`, the resizing transformer.
///
/// The default is the quality kernel (Lanczos-3) after shrinking on load to
/// twice the output size, as libvips' thumbnails; `.fast` is the old way
/// (shrink all the way, box filter), fastest and aliasing on fine detail.
public struct Resampling: Sendable, Hashable, CustomStringConvertible {
    /// A separable, windowed kernel, stretched by the reduction factor when shrinking.
    public enum Filter: Int, Sendable, Hashable, CaseIterable {
        /// Windowed sinc with three lobes: the sharpest; the default.
        case lanczos3
        /// Bicubic, B = C = 1/3: softer, next to no ringing.
        case mitchell
        /// Bicubic, B = 0, C = 1/2: sharp, a little ringing.
        case catmullRom
        /// Triangle.
        case bilinear
        /// Area average (nearest-area when enlarging): the fastest.
        case box

        var core: sd_filter { sd_filter(UInt32(rawValue)) }

        /// The name `sdimage --filter` takes: lanczos3, mitchell, catmull-rom, bilinear, box.
        public var name: String {
            switch self {
            case .lanczos3: "lanczos3"
            case .mitchell: "mitchell"
            case .catmullRom: "catmull-rom"
            case .bilinear: "bilinear"
            case .box: "box"
            }
        }

        /// The filter called `name` (see `name`), or nil.
        public init?(name: String) {
            guard let f = Self.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = f
        }
    }

    /// The kernel (default Lanczos-3).
    public var filter: Filter
    /// Filter in linear light (sRGB decoded, filtered, encoded): truer on
    /// fine bright/dark detail, slower (a float path). Default false, as libvips.
    public var linearLight: Bool
    /// While decoding, shrink-on-load (JPEG's DCT scaling, PNG/WebP
    /// reduction) stops where the image is still this many times the output
    /// size, 1...8; the filter does the rest. 2 (default): libvips' quality;
    /// 1: shrink as far as the output allows (fastest).
    public var shrinkOnLoadMargin: Int

    /// `filter`, optionally in linear light, shrinking on load to `shrinkOnLoadMargin` times the output.
    public init(filter: Filter = .lanczos3, linearLight: Bool = false, shrinkOnLoadMargin: Int = 2) {
        self.filter = filter
        self.linearLight = linearLight
        self.shrinkOnLoadMargin = min(8, max(1, shrinkOnLoadMargin))
    }

    /// Lanczos-3 after shrinking on load to twice the output.
    public static let `default` = Resampling()
    /// Shrink on load all the way, box filter: the fastest thumbnails, with aliasing on fine detail.
    public static let fast = Resampling(filter: .box, shrinkOnLoadMargin: 1)

    /// "lanczos3", "box+linear", "mitchell,margin=3": what a cache key carries.
    public var description: String {
        var s = filter.name
        if linearLight { s += "+linear" }
        if shrinkOnLoadMargin != 2 { s += ",margin=\(shrinkOnLoadMargin)" }
        return s
    }

    var coreFlags: UInt32 { linearLight ? UInt32(SD_RESAMPLE_LINEAR) : 0 }
}
