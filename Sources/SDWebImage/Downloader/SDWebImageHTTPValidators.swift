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
    /// Set when the stored bytes are the file's first bytes only (a
    /// thumbnail's transfer that ended once it settled): what they are
    /// complete for. A larger load fetches the rest.
    public var partial: SDWebImagePartialBody?
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
        partial = SDWebImagePartialBody(response: response)
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
        var now = SDWebImageHTTPValidators(etag: new.etag ?? etag, lastModified: new.lastModified ?? lastModified,
                                           freshUntil: new.freshUntil)
        now.partial = partial  // a 304 says the file is the same: the bytes stay what they were
        return now
    }

    /// Nothing to keep: no validator and no freshness (the manager stores
    /// no extended data for such a response; a loader that stores for it does
    /// the same).
    public var isEmpty: Bool { etag == nil && lastModified == nil && freshUntil == nil && partial == nil }
    var canRevalidate: Bool { etag != nil || lastModified != nil }
}

/// What a stored body that is only the file's first bytes is good for: a
/// thumbnail's transfer ended once the scans still to come could not move it
/// past `settleLevels` (`SDWebImageDownloaderConfig.thumbnailSettleLevels`).
/// A decode that reduces the source to `completeUpToWidth` x
/// `completeUpToHeight` or less, at those levels, is complete from these
/// bytes; anything larger needs the rest of the file.
public struct SDWebImagePartialBody: Codable, Sendable, Equatable {
    /// Bytes stored (the first of the file).
    public var length: Int
    /// The whole file's length, 0 when the server did not say.
    public var fullLength: Int
    /// The largest decode size (stored orientation) the bytes are complete for.
    public var completeUpToWidth: Int
    /// See `completeUpToWidth`.
    public var completeUpToHeight: Int
    /// The tolerance the transfer ended at (`DecodeOptions.settleLevels`).
    public var settleLevels: Int

    /// The fields as they are.
    public init(length: Int, fullLength: Int, completeUpToWidth: Int, completeUpToHeight: Int, settleLevels: Int) {
        self.length = length
        self.fullLength = fullLength
        self.completeUpToWidth = completeUpToWidth
        self.completeUpToHeight = completeUpToHeight
        self.settleLevels = settleLevels
    }

    /// From the downloader's response to an early-ended transfer: 206 with
    /// `Content-Range: bytes 0-N/T` (N + 1 < T, or T unknown) and
    /// `X-SDWebImage-Settled`. nil for any other response (a server's own
    /// 206 for a resumed range continues earlier bytes into a whole file).
    init?(response: HTTPURLResponse) {
        guard response.statusCode == 206, let range = response.value(forHTTPHeaderField: "Content-Range"),
              let settled = response.value(forHTTPHeaderField: Self.settledHeader) else { return nil }
        let r = range.trimmingCharacters(in: .whitespaces)
        guard r.hasPrefix("bytes 0-"), let slash = r.firstIndex(of: "/"),
              let last = Int(r[r.index(r.startIndex, offsetBy: 8)..<slash]) else { return nil }
        let total = Int(r[r.index(after: slash)...]) ?? 0
        guard total == 0 || last + 1 < total else { return nil }
        let parts = settled.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let size = parts.first?.split(separator: "x").compactMap { Int($0) } ?? []
        let levels = parts.dropFirst().first { $0.hasPrefix("levels=") }.flatMap { Int($0.dropFirst(7)) } ?? 0
        guard size.count == 2 else { return nil }
        self.init(length: last + 1, fullLength: total, completeUpToWidth: size[0], completeUpToHeight: size[1],
                  settleLevels: levels)
    }
}

extension SDWebImagePartialBody {
    /// The header the downloader adds to an early-ended transfer's response:
    /// the size and levels its bytes are complete for.
    static let settledHeader = "X-SDWebImage-Settled"

    /// The headers that say what the bytes are, the ones `init(response:)`
    /// reads back (with a 206): `Content-Range: bytes 0-N/T` and
    /// `X-SDWebImage-Settled: WxH; levels=L`.
    package var responseHeaders: [String: String] {
        ["Content-Range": "bytes 0-\(max(0, length - 1))/\(fullLength > 0 ? String(fullLength) : "*")",
         "Content-Length": String(length),
         Self.settledHeader: "\(completeUpToWidth)x\(completeUpToHeight); levels=\(settleLevels)"]
    }
}
