import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDDownloader

/// What an async download gives back.
public struct SDWebImageDownloaderResult: Sendable {
    /// Nil only with `.avoidDecodeImage`.
    public let image: SDImage?
    /// The downloaded bytes (decrypted, when a decryptor was set).
    public let data: Data
    /// The final response.
    public let response: URLResponse?
    /// Timings and sizes.
    public let metrics: DownloadMetrics?
}

extension SDWebImageDownloadToken: Cancellable {}

extension SDWebImageDownloader {
    /// Download and decode; cancelling the Swift task cancels this subscriber.
    public func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions = [],
                              context: SDWebImageContext? = nil) async throws -> SDWebImageDownloaderResult {
        let box = CancelBox<SDWebImageDownloadToken>()
        let opts = options.subtracting(.progressiveLoad)
        let outcome: Result<(SDImage?, Data), any Error> = await withTaskCancellationHandler {
            await awaitCallback { continuation in
                box.set(downloadImage(with: url, options: opts, context: context, progress: nil, completed: { image, data, error, finished in
                    guard finished else { return }
                    if let error { continuation(.failure(error)) }
                    else { continuation(.success((image, data ?? Data()))) }
                }))
            }
        } onCancel: {
            box.cancel()
        }
        let (image, data) = try outcome.get()
        let token = box.value
        return SDWebImageDownloaderResult(image: image, data: data, response: token?.response, metrics: token?.metrics)
    }

    /// Progressive previews (`isIncremental`) as they decode, then the final
    /// image; the stream ends after it or throws the download's error.
    /// Ending the iteration early cancels this subscriber.
    public func progressiveImages(with url: URL?, options: SDWebImageDownloaderOptions = [],
                                  context: SDWebImageContext? = nil) -> AsyncThrowingStream<SDImage, any Error> {
        AsyncThrowingStream { continuation in
            let token = downloadImage(with: url, options: options.union(.progressiveLoad), context: context, progress: nil,
                                      completed: { image, _, error, finished in
                if let error {
                    continuation.finish(throwing: error)
                } else if let image {
                    continuation.yield(image)
                    if finished { continuation.finish() }
                } else if finished {
                    continuation.finish()
                }
            })
            continuation.onTermination = { reason in
                if case .cancelled = reason { token?.cancel() }
            }
        }
    }
}
