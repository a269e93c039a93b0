import CSDCore
import Foundation
import SDCoders

/// The final response's status line and headers.
public struct DownloadResponse: Sendable {
    /// The HTTP status (0 when the URL is not HTTP).
    public let statusCode: Int
    /// The URL that answered, after redirects.
    public let url: URL?
    /// Content-Length, 0 when unknown.
    public let expectedContentLength: Int64
    /// The Content-Type header as sent, when there is one.
    public let mimeType: String?
    /// Headers in arrival order (names as sent).
    public let headers: [(name: String, value: String)]

    /// Last value of a header, case-insensitive.
    public func value(forHTTPHeaderField name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Timing and size of one transfer (milliseconds from its start).
public struct DownloadMetrics: Sendable {
    /// Name resolution done.
    public let dnsMs: Double
    /// TCP connected.
    public let connectMs: Double
    /// TLS handshake done (0 without TLS).
    public let tlsMs: Double
    /// First response byte arrived.
    public let firstByteMs: Double
    /// The whole transfer, redirects included.
    public let totalMs: Double
    /// Waiting in the loop's queue before it started.
    public let queuedMs: Double
    /// Decoding on the loop's workers, summed over the pieces.
    public let decodeMs: Double
    /// Body bytes received over the network.
    public let bytes: Int
    /// 10, 11 or 20.
    public let httpVersion: Int
    /// Redirects followed.
    public let redirects: Int
    /// New connections opened (0: an existing one was reused).
    public let newConnections: Int
    /// Body bytes reused from `DownloadRequest.resume` (not fetched again).
    public var resumedBytes = 0
    /// The whole file's length when the server told it (Content-Length, or a
    /// resumed range's end), else 0.
    public var fullLength = 0
    /// The transfer was ended on purpose once the image was complete at its
    /// size (`DownloadRequest.endsWhenSettled`): `DownloadResult.data` is a
    /// prefix of the file, `bytes` of `fullLength`.
    public var endedEarly = false
}

/// A finished download: the body, its image, the response and timings.
public struct DownloadResult: Sendable {
    /// The raw body (what a disk cache stores).
    public let data: Data
    /// The decoded image, unless decoding was off.
    public let image: DecodedImage?
    /// The final response; nil when none arrived (the connection failed).
    public let response: DownloadResponse?
    /// Timings and sizes.
    public let metrics: DownloadMetrics
    /// When the transfer ended early (`metrics.endedEarly`): the largest
    /// load size (stored orientation) `data` is complete for. A decode that
    /// reduces the source this far or further, at the same settle levels,
    /// gets the same image from these bytes; anything larger needs the rest
    /// of the file. nil for a whole body.
    public var completeUpTo: (width: Int, height: Int)?
    /// When the transfer ended early and the server can send the rest
    /// (ranges and a strong validator): what `DownloadRequest.resume` takes
    /// to fetch only the missing bytes (`Range` + `If-Range`).
    public var resumable: ResumableData?
}
