#if Serve
import Foundation
import SDWebImage

/// The output format asked for; `nil` in `ProcessingOptions.format`: negotiated from `Accept`.
public enum OutputFormat: String, Sendable, CaseIterable {
    case jpeg, png, webp, avif

    /// From an extension or a `format:` argument ("jpg" too); nil: unknown.
    init?(name: String) {
        switch name.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        case "avif": self = .avif
        default: return nil
        }
    }

    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .avif: "image/avif"
        }
    }

    var imageFormat: SDImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webP
        case .avif: .avif
        }
    }
}
#endif
