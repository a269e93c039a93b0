import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import SDSync
#endif

/// Several loaders behind one `SDImageLoader`: a URL goes to the last loader
/// (the highest priority) that can request it (SDWebImage's
/// `SDImageLoadersManager`). E.g. a loader of your own for an `app://` scheme
/// over the downloader.
public final class SDImageLoadersManager: SDImageLoaderProvidingResponse, Sendable {
    /// The manager `SDWebImageManager.shared` loads through: the shared downloader.
    public static let shared = SDImageLoadersManager(loaders: [SDWebImageDownloader.shared])

    private let list: PriorityList<any SDImageLoader>

    /// A manager over `loaders`, lowest priority first.
    public init(loaders: [any SDImageLoader] = []) { list = PriorityList(loaders) }

    /// Lowest priority first.
    public var loaders: [any SDImageLoader] {
        get { list.all }
        set { list.all = newValue }
    }

    /// Add `loader` with the highest priority.
    public func addLoader(_ loader: any SDImageLoader) { list.add(loader) }

    /// Remove `loader` (by identity).
    public func removeLoader(_ loader: any SDImageLoader) { list.remove(loader) }

    private func loader(for url: URL?) -> (any SDImageLoader)? {
        loaders.last { $0.canRequestImage(for: url) }
    }

    /// Whether any of the loaders can request `url`.
    public func canRequestImage(for url: URL?) -> Bool { loader(for: url) != nil }

    /// Through the highest-priority loader that can request `url`; fails with
    /// `invalidURL` when none can.
    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        guard let l = loader(for: url) else {
            completed?(nil, nil, SDWebImageError(.invalidURL, "no loader can request \(url?.absoluteString ?? "nil")"), true)
            return nil
        }
        return l.requestImage(with: url, options: options, context: context, progress: progress, completed: completed)
    }

    /// Through the highest-priority loader that can request `url`, with its response
    /// (nil from a loader that does not provide one); `invalidURL` when none can.
    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             respondingTo completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)? {
        guard let l = loader(for: url) else {
            completed(nil, nil, SDWebImageError(.invalidURL, "no loader can request \(url?.absoluteString ?? "nil")"), true, nil)
            return nil
        }
        return l.requestImageWithResponse(with: url, options: options, context: context, progress: progress,
                                          completed: completed)
    }

    public func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool {
        loader(for: url)?.shouldBlockFailedURL(url, error: error) ?? false
    }
}
