import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `(receivedSize, expectedSize, targetURL)`: a loader's progress (the downloader's block).
public typealias SDImageLoaderProgressBlock = SDWebImageDownloaderProgressBlock

/// `(image, data, error, finished)`: a loader's completion (the downloader's block);
/// `finished == false` for a progressive preview.
public typealias SDImageLoaderCompletedBlock = SDWebImageDownloaderCompletedBlock

/// What the manager loads through (SDWebImageDownloader by default).
public protocol SDImageLoader: AnyObject, Sendable {
    /// Whether this loader handles `url` (its scheme, say).
    func canRequestImage(for url: URL?) -> Bool
    /// Load `url`: progress as bytes arrive, then completion once with `finished == true`
    /// (earlier calls with `finished == false` carry previews). Returns what cancels it.
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)?
    /// Whether this failure should put the URL on the manager's blocklist.
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool
}

/// `(image, data, error, finished, response)`: a loader's completion with the
/// response that served it (nil before the final call, and when none came).
public typealias SDImageLoaderResponseCompletedBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ error: (any Error)?,
                                                                 _ finished: Bool, _ response: URLResponse?) -> Void

/// A loader that hands the response to its completion (ours; SDWebImage's
/// manager has no use for it). The manager keeps the HTTP validators of
/// what it stores from it, for `.refreshCached`; a loader without it just
/// stores no validators.
public protocol SDImageLoaderProvidingResponse: SDImageLoader {
    /// As `requestImage(with:options:context:progress:completed:)`, with the response
    /// that served it in the completion.
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      respondingTo completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)?
}

extension SDWebImageDownloader: SDImageLoaderProvidingResponse {
    /// Downloads through `downloadImage(with:options:context:progress:respondingTo:)`.
    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             respondingTo completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)? {
        downloadImage(with: url, options: options.downloaderOptions, context: context, progress: progress,
                      respondingTo: completed)
    }
}

extension SDImageLoader {
    /// Through `SDImageLoaderProvidingResponse` when the loader has it, else
    /// the plain call with no response.
    func requestImageWithResponse(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                                  progress: SDImageLoaderProgressBlock?,
                                  completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)? {
        if let l = self as? any SDImageLoaderProvidingResponse {
            return l.requestImage(with: url, options: options, context: context, progress: progress, respondingTo: completed)
        }
        return requestImage(with: url, options: options, context: context, progress: progress) { i, d, e, f in
            completed(i, d, e, f, nil)
        }
    }
}

extension SDWebImageDownloader: SDImageLoader {
    /// http, https and file URLs.
    public func canRequestImage(for url: URL?) -> Bool {
        guard let scheme = url?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https" || scheme == "file"
    }

    /// Downloads through `downloadImage(with:options:context:progress:completed:)`.
    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        downloadImage(with: url, options: options.downloaderOptions, context: context, progress: progress,
                      completed: completed)
    }

    /// SDWebImage's rule: an invalid URL and bad image data block; so does any
    /// network error except transient trouble (offline, timeout, cannot find
    /// or connect to the host, lost connection) and cancellation. HTTP
    /// statuses do not block (a 404 may be fixed on the server).
    public func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool {
        if let e = error as? SDWebImageError {
            return e.code == .invalidURL || e.code == .badImageData
        }
        if let e = error as? URLError {
            switch e.code {
            case .notConnectedToInternet, .cancelled, .timedOut, .internationalRoamingOff, .dataNotAllowed,
                 .cannotFindHost, .cannotConnectToHost, .networkConnectionLost:
                return false
            default: return true
            }
        }
        return true
    }
}
