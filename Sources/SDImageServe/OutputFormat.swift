#if Serve
import Foundation
import SDWebImage

/// The output format asked for; `nil` in `ProcessingOptions.format`: negotiated from `Accept`.
public enum OutputFormat: String, Sendable, CaseIterable {
    case jpeg, png, webp, avif, gif

    /// From an extension or a `format:` argument ("jpg" too); nil: unknown.
    public init?(name: String) {
        switch name.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        case "avif": self = .avif
        case "gif": self = .gif
        default: return nil
        }
    }

    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .avif: "image/avif"
        case .gif: "image/gif"
        }
    }

    var imageFormat: SDImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webP
        case .avif: .avif
        case .gif: .gif
        }
    }

    /// A source's own format when results can be written in it (imgproxy
    /// keeps the source's format when none is asked for); nil otherwise.
    init?(source: SDImageFormat) {
        switch source {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .gif: self = .gif
        case .webP: self = .webp
        case .avif: self = .avif
        default: return nil
        }
    }

    /// The file name extension of a result (`Content-Disposition`).
    var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// imgproxy's default quality for the format (`IMGPROXY_FORMAT_QUALITY`'s
    /// default: WebP 79, AVIF 63), else `general` (`IMGPROXY_QUALITY`, 80).
    func defaultQuality(general: Int) -> Int {
        switch self {
        case .webp: 79
        case .avif: 63
        default: general
        }
    }
}
#endif
