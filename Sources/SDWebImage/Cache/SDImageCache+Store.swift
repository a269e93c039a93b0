import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    // MARK: - Store

    /// Memory and (by default) disk; without data the image is encoded
    /// (`SDImageCache.encodedData(for:)`). `completion` runs when the disk write is done.
    public func store(_ image: SDImage?, imageData: Data? = nil, forKey key: String?, toDisk: Bool = true,
                      completion: (@Sendable () -> Void)? = nil) {
        store(image, imageData: imageData, forKey: key, cacheType: toDisk ? .all : .memory) { _ in completion?() }
    }

    /// Store `image` (and `imageData`, else bytes encoded from the image) in the
    /// caches `cacheType` names; `completion` gets the disk write's error.
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: nil, completion: completion)
    }

    /// Store with extended data kept beside the bytes (e.g. HTTP validators).
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: extendedData,
              coder: SDImageCodersManager.shared, encodeOptions: nil, completion: completion)
    }

    /// SDWebImage's full form: an image given without data is encoded by the
    /// context's `.imageCoder` (else the shared coders manager) with its
    /// `.imageEncodeOptions` — so a format only a user's coder knows is
    /// stored in that format, and read back by the same coder.
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, options: SDWebImageOptions = [],
                      context: SDWebImageContext?, cacheType: SDImageCacheType,
                      completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: nil,
              coder: context?[.imageCoder] as? any SDImageCoder ?? SDImageCodersManager.shared,
              encodeOptions: context?[.imageEncodeOptions] as? SDImageCoderOptions, completion: completion)
    }

    private func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                       extendedData: Data?, coder: any SDImageCoder, encodeOptions: SDImageCoderOptions?,
                       completion: (@Sendable ((any Error)?) -> Void)?) {
        let queue = config.callbackQueue
        guard let key, image != nil || imageData != nil else {
            if let completion { queue.async { completion(nil) } }
            return
        }
        if cacheType.includesMemory, let image { storeImage(toMemory: image, forKey: key) }
        guard cacheType.includesDisk else {
            if let completion { queue.async { completion(nil) } }
            return
        }
        // Encoding waits for the disk queue; the bytes are readable meanwhile
        // only when we have them already.
        let gen = imageData.map { setPending(key, $0, extendedData) }
        ioQueue.async { [self] in
            var error: (any Error)?
            if let data = imageData ?? image.flatMap({ Self.encodedData(for: $0, options: encodeOptions, coder: coder) }) {
                do {
                    try writeToDisk(data, key, extendedData)
                    Telemetry.diskWrite(nil, self, config.logger)
                } catch let e {
                    error = e
                    Telemetry.diskWrite(e, self, config.logger)
                }
            } else {
                error = SDWebImageError(.badImageData, "the image could not be encoded")
            }
            if let gen { clearPending(key, gen) }
            let result = error
            if let completion { queue.async { completion(result) } }
        }
    }

    /// The bytes stored for an image given without data (SDWebImage's rule):
    /// an animation's original bytes when it has them; made in memory, its
    /// own format when that is GIF, PNG (APNG) or WebP, else a GIF; a still image its own format
    /// when the coder (a coders manager: any listed coder) encodes it, else
    /// PNG with alpha and JPEG without; `options` as `.imageEncodeOptions`
    /// (default: quality 1).
    public static func encodedData(for image: SDImage, options: SDImageCoderOptions? = nil,
                                   coder: any SDImageCoder = SDImageCodersManager.shared) -> Data? {
        if image.sd_isAnimated, let original = image.animatedProvider?.animatedImageData { return original }
        var format = image.format != .undefined && coder.canEncode(to: image.format) ? image.format : .undefined
        // an animation made in memory (frames transformed one by one) stays animated: in its
        // source's format when that encodes animations (GIF, APNG, WebP), else as a GIF
        if image.sd_isAnimated && ![.gif, .png, .webP].contains(format) && coder.canEncode(to: .gif) { format = .gif }
        if let data = coder.encodedData(with: image, format: format, options: options) { return data }
        // a single coder that knows only its own format: the built-ins take the rest
        return coder is SDImageCodersManager ? nil
            : SDImageCodersManager.shared.encodedData(with: image, format: format, options: options)
    }

    /// Put `image` in the memory cache only (its cost is its bitmap's bytes).
    public func storeImage(toMemory image: SDImage?, forKey key: String?) {
        guard let image, let key, config.shouldCacheImagesInMemory else { return }
        memoryCache.setObject(image, forKey: key, cost: image.cost)
        if config.shouldUseWeakMemoryCache { weakImages.set(image, forKey: key) }
    }

    /// Write bytes to disk now, on the calling thread. Blocks until the disk writes queued before it are done.
    public func storeImageData(toDisk data: Data?, forKey key: String?) throws {
        guard let data, let key else { return }
        try ioQueue.sync { try writeToDisk(data, key, nil) }
    }

    func writeToDisk(_ data: Data, _ key: String, _ extended: Data?) throws {
        guard let disk else { throw diskError ?? DiskCacheError(code: EIO, operation: "open", path: diskCachePath) }
        try disk.setData(data, forKey: key, extendedData: extended)
        sweeper.didWrite(data.count, to: disk, policy: config.sweepPolicy)
    }

    func setPending(_ key: String, _ value: Data?, _ extended: Data? = nil) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        generation += 1
        pending[key] = (generation, value, extended)
        return generation
    }

    func clearPending(_ key: String, _ gen: UInt64) {
        lock.lock()
        // only our own entry: a newer write or removal may have replaced it
        if pending[key]?.generation == gen { pending.removeValue(forKey: key) }
        lock.unlock()
    }

    func pendingData(_ key: String) -> Data?? {
        pendingEntry(key).map { $0.data }
    }

    /// A write or removal not yet on disk: its bytes (nil: removed) and extended data.
    func pendingEntry(_ key: String) -> (data: Data?, extended: Data?)? {
        lock.lock()
        defer { lock.unlock() }
        return pending[key].map { ($0.data, $0.extended) }
    }
}
