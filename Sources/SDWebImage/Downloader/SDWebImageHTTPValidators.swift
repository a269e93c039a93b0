import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ETag and Last-Modified of a stored response, for revalidation, and how
/// long the server said it stays fresh (`Cache-Control: max-age`, less `Age`):
/// until then `.refreshCached` needs no request, as a URL cache would answer.
public struct SDWebImageHTTPValidators: Codable, Sendable, Equatable {
    /// The stored ETag, sent back as `If-None-Match`.
    public var etag: String?
    /// The stored Last-Modified date, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// Until when the entry needs no revalidation; nil: always revalidate.
    public var freshUntil: Date?
    /// Validators from their parts.
    public init(etag: String?, lastModified: String?, freshUntil: Date? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntil = freshUntil
    }

    /// From a response's headers. `no-cache` and `no-store` mean never fresh.
    public init(response: HTTPURLResponse, now: Date = Date()) {
        // only well-formed ones are kept: they go back out in If-None-Match
        self.init(etag: HTTPValidator.etag(response.value(forHTTPHeaderField: "ETag")),
                  lastModified: HTTPValidator.date(response.value(forHTTPHeaderField: "Last-Modified")))
        guard let cc = response.value(forHTTPHeaderField: "Cache-Control")?.lowercased() else { return }
        var maxAge: Int?
        for part in cc.split(separator: ",") {
            let d = part.trimmingCharacters(in: .whitespaces)
            if d == "no-cache" || d == "no-store" { return }
            if d.hasPrefix("max-age=") { maxAge = Int(d.dropFirst(8).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))) }
        }
        let age = response.value(forHTTPHeaderField: "Age").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        if let maxAge, maxAge > age { freshUntil = now.addingTimeInterval(TimeInterval(maxAge - age)) }
    }

    /// The stored validators brought up to date by a 304's headers.
    func updated(by response: HTTPURLResponse?) -> SDWebImageHTTPValidators {
        guard let response else { return self }
        let new = SDWebImageHTTPValidators(response: response)
        return SDWebImageHTTPValidators(etag: new.etag ?? etag, lastModified: new.lastModified ?? lastModified,
                                        freshUntil: new.freshUntil)
    }

    /// Nothing to keep: no validator and no freshness (the manager stores
    /// no extended data for such a response; a loader that stores for it does
    /// the same).
    public var isEmpty: Bool { etag == nil && lastModified == nil && freshUntil == nil }
    var canRevalidate: Bool { etag != nil || lastModified != nil }
}
