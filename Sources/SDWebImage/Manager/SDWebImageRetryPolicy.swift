import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Try a failed download again after a pause: exponential backoff with
/// jitter, only for failures that can pass (a timeout, a lost or refused
/// connection, 408, 429, 5xx). Ours — SDWebImage has only the failed-URL
/// blocklist; Kingfisher's `DelayRetryStrategy` is the model. A URL is
/// blocklisted only when the last attempt has failed.
///
///     SDWebImageManager.shared.retryPolicy = SDWebImageRetryPolicy(maxRetryCount: 3)
///     manager.loadImage(with: url, context: [.retryPolicy: SDWebImageRetryPolicy.none]) { … }
public struct SDWebImageRetryPolicy: Sendable {
    /// Attempts after the first; 0 = never retry.
    public var maxRetryCount: Int
    /// The pause before the first retry; each later one is `multiplier` times longer.
    public var initialDelay: TimeInterval
    /// Each pause is this many times the one before (1: a constant pause).
    public var multiplier: Double
    /// No pause is longer. A server asking (`Retry-After`) for longer than
    /// this gets no retry: the load fails at once.
    public var maxDelay: TimeInterval
    /// 0...1: each pause is shortened by up to this fraction, at random, so
    /// many clients that failed together do not come back together.
    public var jitter: Double
    /// Which failures are retried; default `isTransient`.
    public var shouldRetry: @Sendable (any Error) -> Bool

    /// A policy; values out of range are clamped (no negative counts or delays).
    public init(maxRetryCount: Int = 3, initialDelay: TimeInterval = 0.5, multiplier: Double = 2,
                maxDelay: TimeInterval = 30, jitter: Double = 0.2,
                shouldRetry: @escaping @Sendable (any Error) -> Bool = SDWebImageRetryPolicy.isTransient) {
        self.maxRetryCount = max(0, maxRetryCount)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maxDelay = max(0, maxDelay)
        self.jitter = min(1, max(0, jitter))
        self.shouldRetry = shouldRetry
    }

    /// Never retry (for one load, over a manager-wide policy).
    public static let none = SDWebImageRetryPolicy(maxRetryCount: 0)

    /// The pause before retry number `retry` (1 = the first), before jitter.
    public func delay(forRetry retry: Int) -> TimeInterval {
        min(maxDelay, initialDelay * pow(multiplier, Double(max(0, retry - 1))))
    }

    /// The pause before retry `retry` after `error`, or nil for no retry.
    func pause(after error: any Error, retry: Int) -> TimeInterval? {
        guard retry <= maxRetryCount, shouldRetry(error) else { return nil }
        var pause = delay(forRetry: retry) * (1 - jitter * Double.random(in: 0..<1))
        if let asked = Self.retryAfter(error) {
            guard asked <= maxDelay else { return nil }
            pause = max(pause, asked)
        }
        return pause
    }

    /// Timeouts, connections refused, lost or never made, names not found,
    /// and the statuses that mean "later": 408, 429, 500, 502, 503, 504.
    public static func isTransient(_ error: any Error) -> Bool {
        if let e = error as? URLError {
            return [.timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet,
                    .cannotFindHost, .dnsLookupFailed].contains(e.code)
        }
        if let e = error as? SDWebImageError, e.code == .invalidDownloadStatusCode, let status = e.statusCode {
            return [408, 429, 500, 502, 503, 504].contains(status)
        }
        return false
    }

    /// `Retry-After` in seconds (the HTTP-date form is not used by image servers in practice).
    static func retryAfter(_ error: any Error) -> TimeInterval? {
        guard let e = error as? SDWebImageError, let v = e.response?.value(forHTTPHeaderField: "Retry-After"),
              let seconds = Int(v.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return TimeInterval(seconds)
    }
}

extension SDWebImageContextOption {
    /// `SDWebImageRetryPolicy` for this load (over the manager's `retryPolicy`).
    public static let retryPolicy: Self = "retryPolicy"
}
