import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Rewrites the request before it is sent; nil fails the download with
/// `invalidDownloadOperation`. Only GET is supported (images are fetched).
public protocol SDWebImageDownloaderRequestModifierProtocol: Sendable {
    /// The request to send instead of `request`; nil fails the download.
    func modifiedRequest(with request: URLRequest) -> URLRequest?
}

/// Inspects or rewrites the response; nil fails it with `invalidDownloadResponse`.
/// Status and content type are checked on the modified response.
public protocol SDWebImageDownloaderResponseModifierProtocol: Sendable {
    /// The response to go on with instead of `response`; nil fails the download.
    func modifiedResponse(with response: URLResponse) -> URLResponse?
}

/// A request modifier from a closure (or a set of headers).
public struct SDWebImageDownloaderRequestModifier: SDWebImageDownloaderRequestModifierProtocol {
    private let block: @Sendable (URLRequest) -> URLRequest?
    /// A modifier that asks `block`.
    public init(block: @escaping @Sendable (URLRequest) -> URLRequest?) { self.block = block }
    /// Adds (or replaces) these header fields.
    public init(headers: [String: String]) {
        block = { request in
            var r = request
            for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
            return r
        }
    }
    /// What the block answers.
    public func modifiedRequest(with request: URLRequest) -> URLRequest? { block(request) }
}

/// A response modifier from a closure (or a replacement status).
public struct SDWebImageDownloaderResponseModifier: SDWebImageDownloaderResponseModifierProtocol {
    private let block: @Sendable (URLResponse) -> URLResponse?
    /// A modifier that asks `block`.
    public init(block: @escaping @Sendable (URLResponse) -> URLResponse?) { self.block = block }
    /// Replaces the status code (and optionally the HTTP version and headers).
    public init(statusCode: Int, version: String? = nil, headers: [String: String]? = nil) {
        block = { response in
            guard let url = response.url else { return nil }
            let old = (response as? HTTPURLResponse)?.allHeaderFields as? [String: String]
            return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: version ?? "HTTP/1.1",
                                   headerFields: headers ?? old)
        }
    }
    /// What the block answers.
    public func modifiedResponse(with response: URLResponse) -> URLResponse? { block(response) }
}
