import Dispatch
import Foundation

/// SDWebImage's transformed-key rule: the transformer key goes before the
/// path extension, `http://foo/image.png?foo=bar#mark` + `k` →
/// `http://foo/image-k.png?foo=bar#mark`; without an extension it is appended
/// after a `-`.
public func SDTransformedKeyForKey(_ key: String, _ transformerKey: String) -> String {
    guard !transformerKey.isEmpty else { return key }
    var pathEnd = key.endIndex
    if let cut = key.firstIndex(where: { $0 == "?" || $0 == "#" }) { pathEnd = cut }
    let path = key[..<pathEnd]
    let lastSlash = path.lastIndex(of: "/")
    let nameStart = lastSlash.map { path.index(after: $0) } ?? path.startIndex
    let name = path[nameStart...]
    // Only a URL-like key (scheme://) or a file name gets the in-path insert.
    if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) < name.endIndex {
        return String(key[..<dot]) + "-" + transformerKey + String(key[dot...])
    }
    return key + "-" + transformerKey
}

/// SDWebImage's thumbnail key: `Thumbnail({W,H},P)` with `%f` sizes and P = 0/1.
public func SDThumbnailedKeyForKey(_ key: String, _ pixelSize: CGSize, _ preserveAspectRatio: Bool) -> String {
    let t = String(format: "Thumbnail({%f,%f},%d)", Double(pixelSize.width), Double(pixelSize.height),
                   preserveAspectRatio ? 1 : 0)
    return SDTransformedKeyForKey(key, t)
}

extension Dictionary where Key == SDWebImageContextOption, Value == any Sendable {
    /// `key` with the context's thumbnail part (`.imageThumbnailPixelSize`,
    /// `.imagePreserveAspectRatio`), or nil when the context asks for none.
    func thumbnailedKey(_ key: String) -> String? {
        guard let size = pixelSize(.imageThumbnailPixelSize) else { return nil }
        let keep = self[.imagePreserveAspectRatio] as? Bool ?? true
        return SDThumbnailedKeyForKey(key, CGSize(width: size.width, height: size.height), keep)
    }
}

extension SDImageCoderOptions {
    /// Decode choices for an image known by `key` (a URL string or cache key):
    /// thumbnail box, aspect, byte budget, scale (`@2x` in the key unless the
    /// context says otherwise).
    static func make(key: String?, scaleDown: Bool, avoidDecode: Bool, progressive: Bool,
                     context: SDWebImageContext?, queue: SDCallbackQueue?) -> SDImageCoderOptions {
        var o = SDImageCoderOptions()
        if let size = context?.pixelSize(.imageThumbnailPixelSize) { o.decode.thumbnailPixelSize = size }
        if let keep = context?[.imagePreserveAspectRatio] as? Bool { o.decode.preserveAspectRatio = keep }
        if let bytes = context?.int(.imageScaleDownLimitBytes) {
            o.decode.scaleDownLimitBytes = max(0, bytes)
        } else if scaleDown {
            o.decode.scaleDownLimitBytes = DecodeOptions.defaultScaleDownLimitBytes
        }
        o.scaleFactor = max(1, context?.double(.imageScaleFactor) ?? SDImageScaleFactorForKey(key))
        o.decodeImage = !avoidDecode
        o.progressive = progressive
        o.callbackQueue = queue
        o.responseBox = context?[.responseBox] as? ResponseBox
        return o
    }
}
