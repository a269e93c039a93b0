import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    // MARK: - Read

    /// The image in the memory cache for `key`, or nil; never touches the disk.
    public func imageFromMemoryCache(forKey key: String?) -> SDImage? {
        guard let key else { return nil }
        if let image = memoryCache.object(forKey: key) { return image }
        // evicted, but maybe alive elsewhere: back into the LRU
        guard config.shouldUseWeakMemoryCache, let image = weakImages.value(forKey: key) else { return nil }
        memoryCache.setObject(image, forKey: key, cost: image.cost)
        return image
    }

    /// Read and decode now (and keep the image in memory).
    public func imageFromDiskCache(forKey key: String?, options: SDImageCacheOptions = [],
                                   context: SDWebImageContext? = nil) -> SDImage? {
        guard let key, let data = storedData(forKey: key) else { return nil }
        let request = SDImageLoadRequest.resolve(context)
        let image = decode(data, key, options, request)
        if let image, let memoryKey = request.memoryKey(forDiskHitAt: key) { storeImage(toMemory: image, forKey: memoryKey) }
        return image
    }

    /// Memory first, then disk.
    public func imageFromCache(forKey key: String?) -> SDImage? {
        imageFromMemoryCache(forKey: key) ?? imageFromDiskCache(forKey: key)
    }

    /// The file's stored bytes (nil on a miss); refreshes the entry's access
    /// date. An entry that holds only a file's first bytes (a thumbnail's
    /// transfer that ended once it settled: `SDWebImageHTTPValidators.partial`)
    /// is not the file and answers nil; images as small as it is complete for
    /// still decode from it (`imageFromDiskCache`, queries).
    public func diskImageData(forKey key: String?) -> Data? {
        guard let key, let data = storedData(forKey: key) else { return nil }
        return partialBody(forKey: key) == nil ? data : nil
    }

    /// Whether the disk cache has the file's bytes for `key` (synchronous):
    /// false for an entry of a file's first bytes only, as `diskImageData`.
    public func diskImageDataExists(withKey key: String?) -> Bool {
        guard let key else { return false }
        if let p = pendingData(key) { return p != nil && partialBody(forKey: key) == nil }
        return (disk?.containsData(forKey: key) ?? false) && partialBody(forKey: key) == nil
    }

    /// The entry's bytes, whatever they are complete for (a partial entry's
    /// prefix too): what the decodes read.
    func storedData(forKey key: String) -> Data? {
        if let p = pendingData(key) { return p }
        return disk?.data(forKey: key)
    }

    /// Whether the disk cache has an entry for `key`, answered on the cache's queue.
    public func diskImageExists(withKey key: String?, completion: @escaping @Sendable (Bool) -> Void) {
        let queue = config.callbackQueue
        readQueue.async { [self] in
            let exists = diskImageDataExists(withKey: key)
            queue.async { completion(exists) }
        }
    }

    /// Move the entries of an old cache folder (another version's, another
    /// location) into `dstPath` and remove the old folder, as SDWebImage's
    /// disk cache: nothing happens when `srcPath` does not exist; a missing
    /// `dstPath` is created by the move; an existing one gets the files merged
    /// in (moved files win); a file in the way of `dstPath` is replaced.
    /// Blocks until the disk writes queued before it are done.
    public func moveCacheDirectory(fromPath srcPath: String, toPath dstPath: String) throws {
        try ioQueue.sync { try DiskCache.moveDirectory(from: srcPath, to: dstPath) }
    }

    /// Extended data stored with the entry (e.g. ETag and Last-Modified). Blocks until the disk writes queued before it are done.
    public func extendedData(forKey key: String?) -> Data? {
        guard let key else { return nil }
        return ioQueue.sync { disk?.extendedData(forKey: key) }
    }

    /// Replace the extended data of an existing disk entry (nil removes it);
    /// throws when there is no entry or the disk fails. Blocks until the disk writes queued before it are done.
    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {
        guard let key else { return }
        try ioQueue.sync {
            guard let disk else { throw diskError ?? DiskCacheError(code: EIO, operation: "open", path: diskCachePath) }
            try disk.setExtendedData(data, forKey: key)
        }
    }

    /// Make a disk entry new again (a 304 from the server says it is current).
    public func touchDiskEntry(forKey key: String?) {
        guard let key else { return }
        ioQueue.async { [self] in disk?.touch(forKey: key) }
    }

    func decode(_ data: Data, _ key: String, _ options: SDImageCacheOptions, _ request: SDImageLoadRequest) -> SDImage? {
        if let image = Self.decode(data, key, options, request, limits: config.decodeLimits, isolation: config.decoderIsolation) {
            return image
        }
        // the first bytes of a file only (a thumbnail's transfer that ended
        // once it settled): complete for a decode as small, at the levels it
        // ended at; anything larger is incomplete, and a miss
        guard let partial = partialBody(forKey: key), partial.settleLevels > 0 else { return nil }
        return Self.decode(data, key, options, request, limits: config.decodeLimits, isolation: config.decoderIsolation,
                           settleLevels: partial.settleLevels)
    }

    /// What the entry's bytes are complete for, when they are a file's first bytes only.
    /// Read without waiting for the disk queue: a write still pending has
    /// its record beside its bytes.
    func partialBody(forKey key: String) -> SDWebImagePartialBody? {
        let raw: Data?
        if let p = pendingEntry(key) { raw = p.extended } else { raw = disk?.extendedData(forKey: key) }
        guard let raw else { return nil }
        return (try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw))?.partial
    }

    static func decode(_ data: Data, _ key: String, _ options: SDImageCacheOptions, _ request: SDImageLoadRequest,
                       limits: DecodeLimits, isolation: DecoderIsolation? = nil, acceptingIncomplete: Bool = false,
                       settleLevels: Int = 0) -> SDImage? {
        try? decodeOrThrow(data, key, options, request, limits: limits, isolation: isolation,
                           acceptingIncomplete: acceptingIncomplete, settleLevels: settleLevels)
    }

    static func decodeOrThrow(_ data: Data, _ key: String, _ options: SDImageCacheOptions, _ request: SDImageLoadRequest,
                              limits: DecodeLimits, isolation: DecoderIsolation? = nil, acceptingIncomplete: Bool = false,
                              settleLevels: Int = 0) throws(SDWebImageError) -> SDImage {
        var o = request.coderOptions(key: key, scaleDown: options.contains(.scaleDownLargeImages),
                                     avoidDecode: false, progressive: false, queue: nil,
                                     firstFrameOnly: options.contains(.decodeFirstFrameOnly),
                                     preloadAllFrames: options.contains(.preloadAllFrames),
                                     matchAnimatedImageClass: options.contains(.matchAnimatedImageClass))
        o.decode = o.decode.capped(by: limits)
        o.decode.settleLevels = settleLevels
        if let isolation, o.coder == nil { o.coder = SDImageCoreCoder.isolating(isolation) }
        // A file that ends early (a crash or power loss mid-write, a disk
        // error) decodes full-size with its tail grey; it is not a hit.
        // The caller fetches again and the new store replaces it.
        let r = try o.image(from: data).get()
        guard r.complete || acceptingIncomplete else {
            throw SDWebImageError(.badImageData, "the file ends early (\(data.count) bytes): its image is incomplete")
        }
        return r.image
    }

    /// A memory hit as the query asks for it: a still first frame for
    /// `.decodeFirstFrameOnly`, a miss when `.matchAnimatedImageClass` wants another class.
    static func memoryHit(_ hit: SDImage, _ options: SDImageCacheOptions, _ context: SDWebImageContext?) -> SDImage? {
        if options.contains(.decodeFirstFrameOnly), hit.sd_isAnimated {
            return SDImage(bitmap: hit.bitmap, format: hit.format, orientation: hit.orientation, scale: hit.scale,
                           sourcePixelWidth: hit.sourcePixelWidth, sourcePixelHeight: hit.sourcePixelHeight)
        }
        if options.contains(.matchAnimatedImageClass), let cls = SDImageLoadRequest.resolve(context).animatedImageClass,
           type(of: hit) != cls {
            return nil
        }
        return hit
    }

    /// Query memory, then disk. Returns nil when it answered at once (a memory
    /// hit without data wanted, a sync query, no key); otherwise a token that
    /// cancels the pending disk part.
    @discardableResult
    public func queryCacheOperation(forKey key: String?, options: SDImageCacheOptions = [],
                                    context: SDWebImageContext? = nil, cacheType: SDImageCacheType = .all,
                                    done: SDImageCacheQueryCompletionBlock?) -> SDImageCacheToken? {
        guard let key, cacheType != .none else {
            done?(nil, nil, .none)
            return nil
        }
        var hit = cacheType.includesMemory ? imageFromMemoryCache(forKey: key) : nil
        if let h = hit, !options.isDisjoint(with: [.decodeFirstFrameOnly, .matchAnimatedImageClass]) {
            hit = Self.memoryHit(h, options, context)
        }
        let image = hit
        if let image, !options.contains(.queryMemoryData) && !options.contains(.queryMemoryDataSync) {
            done?(image, nil, .memory)
            return nil
        }
        if cacheType == .memory {
            done?(image, nil, image == nil ? .none : .memory)
            return nil
        }
        // not before: a memory hit answers inline and needs no queue
        let queue = context?.callbackQueue ?? SDCallbackQueue(dispatchQueue: config.callbackQueue, policy: .dispatch)
        let token = SDImageCacheToken(key: key, done: done)
        let sync = image != nil ? options.contains(.queryMemoryDataSync) : options.contains(.queryDiskDataSync)
        let work: @Sendable () -> Void = { [self] in
            if token.isCancelled { return }
            let data = storedData(forKey: key)
            if let image {
                token.finish(image, data, .memory, on: sync ? nil : queue)
                return
            }
            guard let data else {
                token.finish(nil, nil, .none, on: sync ? nil : queue)
                return
            }
            // the bytes handed on are the file's: a partial entry's are not it
            let whole = partialBody(forKey: key) == nil
            if options.contains(.avoidDecodeImage) {
                token.finish(nil, whole ? data : nil, whole ? .disk : .none, on: sync ? nil : queue)
                return
            }
            let request = SDImageLoadRequest.resolve(context)
            let decoded = decode(data, key, options, request)
            // a context that stores elsewhere than memory keeps the hit out of
            // it (as SDWebImage); a thumbnail made from a full-size entry goes
            // under its own key, never the full-size one
            if let decoded, cacheType.includesMemory, request.storeCacheType.includesMemory,
               let memoryKey = request.memoryKey(forDiskHitAt: key) {
                storeImage(toMemory: decoded, forKey: memoryKey)
            }
            token.finish(decoded, whole ? data : nil, decoded == nil ? .none : .disk, on: sync ? nil : queue)
        }
        if sync { work() } else { readQueue.async(execute: work) }
        return token
    }

    /// Memory, then disk (as `cacheType` allows): the image, its bytes when read from disk, and where it was.
    /// The returned operation cancels a disk query that has not answered yet.
    public func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                           cacheType: SDImageCacheType, completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        queryCacheOperation(forKey: key, options: options.cacheOptions, context: context, cacheType: cacheType,
                            done: completion)
    }
}

/// Decode bytes read from a cache the way a disk hit is decoded: the
/// context's thumbnail, scale, coder and decode options, and the options'
/// `.scaleDownLargeImages`, `.decodeFirstFrameOnly`, `.preloadAllFrames` and
/// `.matchAnimatedImageClass` (SDWebImage's `SDImageCacheDecodeImageData`).
/// Nil when the bytes do not decode, or hold an image that ends early —
/// unless `acceptingIncomplete`: for bytes known to be whole (a checksummed
/// value, a finished transfer) whose image the origin itself cut short,
/// which then decode as the downloader decodes them (the tail grey).
/// `limits` caps the decode whatever the context asks (give bytes others
/// could have written the downloader's caps). For caches and loaders of
/// your own that hold encoded bytes.
public func SDImageCacheDecodeImageData(_ imageData: Data, _ cacheKey: String, _ options: SDWebImageOptions,
                                        _ context: SDWebImageContext?, limits: DecodeLimits = DecodeLimits(),
                                        acceptingIncomplete: Bool = false) -> SDImage? {
    SDImageCache.decode(imageData, cacheKey, options.cacheOptions, SDImageLoadRequest.resolve(context),
                        limits: limits, acceptingIncomplete: acceptingIncomplete)
}

extension SDImageCache {
    /// The image `data` decodes to for a load with `context` (its thumbnail
    /// size, render plan, coder), within `limits` — or why not: the
    /// decoder's reason (`.badImageData`, the core's `CoderError` as its
    /// `underlyingError`: a sandboxed worker over its budget is
    /// `.overLimit`), or a file that ends early. `SDImageCacheDecodeImageData`
    /// with the reason instead of nil: for a server that fetches its sources
    /// as bytes (`.avoidDecodeImage`) and decodes them later, under bounds of
    /// its own.
    public static func decodedImage(from data: Data, forKey key: String, options: SDWebImageOptions = [],
                                    context: SDWebImageContext? = nil,
                                    limits: DecodeLimits = DecodeLimits()) throws(SDWebImageError) -> SDImage {
        try decodeOrThrow(data, key, options.cacheOptions, SDImageLoadRequest.resolve(context), limits: limits)
    }
}

/// Decode a file's first bytes only (a thumbnail's early-ended transfer,
/// `partial` its record): an image when the decode the context asks for is
/// complete from them at the levels the transfer ended at (a thumbnail as
/// small or smaller), else nil — they are never a full-size image. For
/// caches and loaders of your own that share such entries.
public func SDImageCacheDecodePartialImageData(_ imageData: Data, _ cacheKey: String, _ options: SDWebImageOptions,
                                               _ context: SDWebImageContext?, partial: SDWebImagePartialBody,
                                               limits: DecodeLimits = DecodeLimits()) -> SDImage? {
    guard imageData.count == partial.length else { return nil }
    return SDImageCache.decode(imageData, cacheKey, options.cacheOptions, SDImageLoadRequest.resolve(context),
                               limits: limits, settleLevels: max(0, partial.settleLevels))
}
