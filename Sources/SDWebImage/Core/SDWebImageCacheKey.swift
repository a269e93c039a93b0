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
