import Foundation

public typealias SDImageLoaderProgressBlock = SDWebImageDownloaderProgressBlock
public typealias SDImageLoaderCompletedBlock = SDWebImageDownloaderCompletedBlock

/// What the manager loads through (SDWebImageDownloader by default).
public protocol SDImageLoader: AnyObject, Sendable {
    func canRequestImage(for url: URL?) -> Bool
    func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                      progress: SDImageLoaderProgressBlock?,
                      completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)?
    /// Whether this failure should put the URL on the manager's blocklist.
    func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool
}

extension SDWebImageDownloader: SDImageLoader {
    public func canRequestImage(for url: URL?) -> Bool {
        guard let scheme = url?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https" || scheme == "file"
    }

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
