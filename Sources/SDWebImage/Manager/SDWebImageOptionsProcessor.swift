import Foundation

/// Rewrites the options and context of every load (global policy).
public protocol SDWebImageOptionsProcessorProtocol: Sendable {
    /// The options and context to load `url` with; nil: keep the caller's.
    func processedResult(for url: URL?, options: SDWebImageOptions, context: SDWebImageContext?) -> SDWebImageOptionsResult?
}

/// Options and context, as an options processor returns them.
public struct SDWebImageOptionsResult: Sendable {
    /// The options to load with.
    public let options: SDWebImageOptions
    /// The context to load with.
    public let context: SDWebImageContext?
    /// A result from its parts.
    public init(options: SDWebImageOptions, context: SDWebImageContext?) {
        self.options = options
        self.context = context
    }
}

/// An options processor from a closure.
public struct SDWebImageOptionsProcessor: SDWebImageOptionsProcessorProtocol {
    private let block: @Sendable (URL?, SDWebImageOptions, SDWebImageContext?) -> SDWebImageOptionsResult?
    /// A processor that asks `block`.
    public init(block: @escaping @Sendable (URL?, SDWebImageOptions, SDWebImageContext?) -> SDWebImageOptionsResult?) {
        self.block = block
    }
    /// What `block` answers.
    public func processedResult(for url: URL?, options: SDWebImageOptions, context: SDWebImageContext?) -> SDWebImageOptionsResult? {
        block(url, options, context)
    }
}
