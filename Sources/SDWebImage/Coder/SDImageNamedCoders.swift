import Foundation
import SDCoders

/// JPEG and PNG stills (SDWebImage's `SDImageIOCoder`); an APNG's first frame.
// @unchecked: SDImageCoreCoder's invariant; no state of its own (Swift asks subclasses to restate it).
public final class SDImageIOCoder: SDImageCoreCoder, @unchecked Sendable {
    /// The instance the coders manager lists.
    public static let shared = SDImageIOCoder()
    override class var claim: Claim { Claim(decodes: [.jpeg, .png], encodes: [.jpeg, .png], animates: false) }
}

/// GIF, animated (SDWebImage's `SDImageGIFCoder`).
// @unchecked: SDImageCoreCoder's invariant; no state of its own.
public final class SDImageGIFCoder: SDImageCoreCoder, @unchecked Sendable {
    /// The instance the coders manager lists.
    public static let shared = SDImageGIFCoder()
    override class var claim: Claim { Claim(format: .gif) }
}

/// PNG and APNG, animated (SDWebImage's `SDImageAPNGCoder`).
// @unchecked: SDImageCoreCoder's invariant; no state of its own.
public final class SDImageAPNGCoder: SDImageCoreCoder, @unchecked Sendable {
    /// The instance the coders manager lists.
    public static let shared = SDImageAPNGCoder()
    override class var claim: Claim { Claim(format: .png) }
}

/// WebP stills and animations (SDWebImage's `SDImageWebPCoder`, libwebp).
// @unchecked: SDImageCoreCoder's invariant; no state of its own.
public final class SDImageWebPCoder: SDImageCoreCoder, @unchecked Sendable {
    /// The instance the coders manager lists.
    public static let shared = SDImageWebPCoder()
    override class var claim: Claim { Claim(format: .webP) }
}

/// AVIF stills and image sequences (SDWebImage's `SDImageAVIFCoder`,
/// libavif): a sequence is an animation once all its bytes are in, each
/// frame decoded from the nearest key frame; it loops forever (libavif 0.11
/// reads and writes no repetition count).
// @unchecked: SDImageCoreCoder's invariant; no state of its own.
public final class SDImageAVIFCoder: SDImageCoreCoder, @unchecked Sendable {
    /// The instance the coders manager lists.
    public static let shared = SDImageAVIFCoder()
    override class var claim: Claim { Claim(format: .avif) }
}

extension SDImageCoreCoder {
    /// The built-in coders, derived from the C core's codec rows: one per
    /// format this build decodes or encodes — SDWebImage's named coders in
    /// its order (`SDImageIOCoder` for JPEG and PNG stills, GIF, APNG, WebP,
    /// AVIF), then `SDImageCoreCoder(format:)` for each other format.
    static var builtIns: [any SDImageCoder] {
        let named: [(ImageFormat, SDImageCoreCoder)] = [
            (.gif, SDImageGIFCoder.shared), (.png, SDImageAPNGCoder.shared),
            (.webP, SDImageWebPCoder.shared), (.avif, SDImageAVIFCoder.shared),
        ]
        let capable = ImageFormat.allCases.filter { !$0.capabilities.isDisjoint(with: [.decode, .encode]) }
        let others = capable.filter { f in f != .jpeg && !named.contains { $0.0 == f } }
        return [SDImageIOCoder.shared] + named.filter { capable.contains($0.0) }.map(\.1) + others.map(builtIn(for:))
    }

    /// One instance per format, made once.
    private static let generic: [ImageFormat: SDImageCoreCoder] = Dictionary(
        uniqueKeysWithValues: ImageFormat.allCases.map { ($0, SDImageCoreCoder(format: $0)) })
    private static func builtIn(for format: ImageFormat) -> SDImageCoreCoder { generic[format]! }
}
