import Foundation
import SDCoders

/// A load's context resolved once, typed: what the layers below the manager
/// (downloader, caches) read instead of the context dictionary, and never by
/// parsing a key string. The manager makes one per `loadImage` and passes it
/// down under an internal context key; a direct call to the downloader or a
/// cache resolves one from its own context (`resolve`).
struct SDImageLoadRequest: Sendable {
    /// SDWebImage's cache keys, strings used only to name entries: the
    /// filter's key (else the URL string), that plus the thumbnail part,
    /// and the storage key (plus the transformer part).
    struct Keys: Sendable, Equatable {
        let original: String
        let thumbnail: String?
        let storage: String
        /// A thumbnail or transformed image: cached under its own key.
        var derived: Bool { storage != original }
    }

    /// The thumbnail box (`.imageThumbnailPixelSize`, `.imagePreserveAspectRatio`)
    /// as the render the decoder plans: a fit, or a force, never enlarged.
    let thumbnail: RenderPlan?
    /// `.imageRenderPlan`: decoded to this render (over the thumbnail box).
    let render: RenderPlan?
    let transformer: (any SDImageTransformer)?
    /// The context's scale; nil: from the key (`@2x`), as SDWebImage.
    let scaleFactor: Double?
    /// The context's byte budget; nil: the default when `.scaleDownLargeImages`.
    let scaleDownLimitBytes: Int?
    /// `.imageResampling`; nil: the default.
    let resampling: Resampling?
    /// `.imageColorManagement`; nil: the default (sRGB).
    let colorManagement: ColorManagement?
    let queryCacheType: SDImageCacheType
    let storeCacheType: SDImageCacheType
    let originalQueryCacheType: SDImageCacheType
    let originalStoreCacheType: SDImageCacheType
    let callbackQueue: SDCallbackQueue?
    /// `.imageCoder`, `.imageDecodeOptions`, `.imageEncodeOptions`, `.animatedImageClass`.
    let coder: (any SDImageCoder)?
    let decodeOptions: SDImageCoderOptions
    let encodeOptions: SDImageCoderOptions?
    let animatedImageClass: SDAnimatedImage.Type?
    /// The manager's parts for this load (`.imageCache`, `.originalImageCache`,
    /// `.imageLoader`, `.retryPolicy`, `.cacheSerializer`, `.cacheKeyFilter`);
    /// nil: the manager's own.
    let imageCache: (any SDImageCacheProtocol)?
    let originalImageCache: (any SDImageCacheProtocol)?
    let imageLoader: (any SDImageLoader)?
    let retryPolicy: SDWebImageRetryPolicy?
    let cacheSerializer: (any SDWebImageCacheSerializerProtocol)?
    let cacheKeyFilter: (any SDWebImageCacheKeyFilterProtocol)?
    /// Known when the manager made it (it knows which entry it asks for).
    private(set) var keys: Keys?
    /// A resizing transformer the decoder does itself, for the manager
    /// (which applies the transformer after: it finds the image at its
    /// size, a copy): its box as a render, so the source shrinks on load.
    /// Not with a thumbnail box or a render of the context's, nor when the
    /// decoded original is asked for in memory (`.originalStoreCacheType`).
    private(set) var transformPlan: RenderPlan?

    init(context: SDWebImageContext?) {
        let c = context ?? [:]
        if let size = c.pixelSize(.imageThumbnailPixelSize) {
            let keep = c[.imagePreserveAspectRatio] as? Bool ?? true
            thumbnail = RenderPlan(width: size.width, height: size.height, resizingType: keep ? .fit : .force)
        } else {
            thumbnail = nil
        }
        render = c[.imageRenderPlan] as? RenderPlan
        transformer = c[.imageTransformer] as? any SDImageTransformer
        scaleFactor = c.double(.imageScaleFactor)
        scaleDownLimitBytes = c.int(.imageScaleDownLimitBytes)
        resampling = c[.imageResampling] as? Resampling
            ?? (c[.imageResampling] as? Resampling.Filter).map { Resampling(filter: $0) }
        colorManagement = c[.imageColorManagement] as? ColorManagement
        // The memory cache holds sRGB images under keys that do not say how
        // they were decoded: a load that keeps source colours neither reads
        // nor writes it (the disk keeps the file's bytes, the same for both).
        let keepsSource = colorManagement == .keepSource
        queryCacheType = Self.withoutMemory(c[.queryCacheType] as? SDImageCacheType ?? .all, if: keepsSource)
        storeCacheType = Self.withoutMemory(c[.storeCacheType] as? SDImageCacheType ?? .all, if: keepsSource)
        originalQueryCacheType = c[.originalQueryCacheType] as? SDImageCacheType ?? .disk
        originalStoreCacheType = c[.originalStoreCacheType] as? SDImageCacheType ?? .disk
        callbackQueue = c.callbackQueue
        coder = c[.imageCoder] as? any SDImageCoder
        decodeOptions = c[.imageDecodeOptions] as? SDImageCoderOptions ?? [:]
        encodeOptions = c[.imageEncodeOptions] as? SDImageCoderOptions
        animatedImageClass = c[.animatedImageClass] as? SDAnimatedImage.Type
        imageCache = c[.imageCache] as? any SDImageCacheProtocol
        originalImageCache = c[.originalImageCache] as? any SDImageCacheProtocol
        imageLoader = c[.imageLoader] as? any SDImageLoader
        retryPolicy = c[.retryPolicy] as? SDWebImageRetryPolicy
        cacheSerializer = c[.cacheSerializer] as? any SDWebImageCacheSerializerProtocol
        cacheKeyFilter = c[.cacheKeyFilter] as? any SDWebImageCacheKeyFilterProtocol
    }

    /// The manager's request for `url`, keys included (by the context's key
    /// filter, else the manager's `keyFilter`).
    init(url: URL?, context: SDWebImageContext, keyFilter: (any SDWebImageCacheKeyFilterProtocol)?) {
        self.init(context: context)
        let filter = cacheKeyFilter ?? keyFilter
        keys = url.flatMap {
            Self.keys(for: $0, keyFilter: filter, thumbnail: thumbnail, render: render, resampling: resampling,
                      transformer: transformer)
        }
        if thumbnail == nil, render == nil, !originalStoreCacheType.includesMemory {
            transformPlan = foldedResize?.plan
        }
    }

    /// The resizing transformer the decoder can do first: the transformer,
    /// or a pipeline's first member (the rest then work on its result).
    var foldedResize: SDImageResizingTransformer? {
        transformer as? SDImageResizingTransformer
            ?? (transformer as? SDImagePipelineTransformer)?.transformers.first as? SDImageResizingTransformer
    }

    /// `type` without the memory cache when `drop`.
    static func withoutMemory(_ type: SDImageCacheType, if drop: Bool) -> SDImageCacheType {
        guard drop else { return type }
        switch type {
        case .all, .disk: return .disk
        case .memory, .none: return .none
        }
    }

    /// The typed request the manager passed down, else one resolved from `context`.
    static func resolve(_ context: SDWebImageContext?) -> SDImageLoadRequest {
        context?[.loadRequest] as? SDImageLoadRequest ?? SDImageLoadRequest(context: context)
    }

    static func keys(for url: URL, keyFilter: (any SDWebImageCacheKeyFilterProtocol)?, thumbnail: RenderPlan?,
                     render: RenderPlan? = nil, resampling: Resampling?, transformer: (any SDImageTransformer)?) -> Keys? {
        guard let original = keyFilter.map({ $0.cacheKey(for: url) }) ?? url.absoluteString else { return nil }
        let thumb = derivedKey(original, thumbnail, render, resampling)
        var storage = thumb ?? original
        if let transformer { storage = SDTransformedKeyForKey(storage, transformer.transformerKey) }
        return Keys(original: original, thumbnail: thumb, storage: storage)
    }

    /// The key of what a decode makes of the entry `key` with a thumbnail
    /// box or a render (nil: neither, the entry itself).
    static func derivedKey(_ key: String, _ thumbnail: RenderPlan?, _ render: RenderPlan?, _ resampling: Resampling?) -> String? {
        if let render {  // the render replaces the box
            var k = SDTransformedKeyForKey(key, "RenderPlan(\(render))")
            if let resampling, resampling != .default { k = SDTransformedKeyForKey(k, "Resampling(\(resampling))") }
            return k
        }
        return thumbnail.map { thumbnailKey(key, $0, resampling) }
    }

    /// SDWebImage's thumbnail key, plus the resampling when it is not the
    /// default (so the default keeps SDWebImage's keys).
    static func thumbnailKey(_ key: String, _ t: RenderPlan, _ resampling: Resampling?) -> String {
        let thumb = SDThumbnailedKeyForKey(key, CGSize(width: Double(t.width), height: Double(t.height)),
                                           t.resizingType == .fit)
        guard let resampling, resampling != .default else { return thumb }
        return SDTransformedKeyForKey(thumb, "Resampling(\(resampling))")
    }

    /// How to decode for an image known by `key` (a URL string or cache key).
    func coderOptions(key: String?, scaleDown: Bool, avoidDecode: Bool, progressive: Bool,
                      queue: SDCallbackQueue?, firstFrameOnly: Bool = false, preloadAllFrames: Bool = false,
                      matchAnimatedImageClass: Bool = false) -> SDImageLoaderDecodeOptions {
        var o = SDImageLoaderDecodeOptions()
        o.decode = decodeOptions.decodeOptions  // the dictionary's values, then the context's
        o.extraOptions = decodeOptions
        if let list = coder as? SDImageCodersManager {
            o.codersManager = list  // a list of coders: asked in its order
        } else {
            o.coder = coder
        }
        o.animatedImageClass = animatedImageClass
        o.matchAnimatedImageClass = matchAnimatedImageClass
        o.preloadAllFrames = preloadAllFrames
        if firstFrameOnly { o.decode.firstFrameOnly = true }
        // the box goes down as the render the decoder would make of it (the
        // orientation as the decode applies it); a render of the context's replaces it
        if var box = render ?? thumbnail ?? transformPlan {
            if render == nil { box.autoRotate = o.decode.applyOrientation }
            o.decode.render = box
        }
        if transformPlan != nil, let t = foldedResize { o.decode.resampling = t.resampling }
        if let resampling { o.decode.resampling = resampling }
        if let colorManagement { o.decode.colorManagement = colorManagement }
        if let bytes = scaleDownLimitBytes {
            o.decode.scaleDownLimitBytes = max(0, bytes)
        } else if scaleDown {
            o.decode.scaleDownLimitBytes = DecodeOptions.defaultScaleDownLimitBytes
        }
        o.scaleFactor = max(1, scaleFactor ?? decodeOptions.double(.decodeScaleFactor) ?? SDImageScaleFactorForKey(key))
        o.decodeImage = !avoidDecode
        o.progressive = progressive
        o.callbackQueue = queue
        return o
    }

    /// Where a disk hit for `key`, decoded with this request, belongs in the
    /// memory cache: under `key`, unless it was decoded to a thumbnail from a
    /// full-size entry — then under the thumbnail's own key, never the
    /// full-size one (SDWebImage's test17). nil: nowhere.
    func memoryKey(forDiskHitAt key: String) -> String? {
        guard thumbnail != nil || render != nil || transformPlan != nil else { return key }
        if let keys {  // the manager's: it says which entry it asked for
            if key == keys.storage { return key }
            return key == keys.original ? keys.thumbnail : nil
        }
        // a direct query with a thumbnail box or a render names a full-size entry
        return Self.derivedKey(key, thumbnail, render, resampling)
    }
}

extension SDWebImageContextOption {
    /// Internal: the manager's `SDImageLoadRequest` for the layers below.
    static let loadRequest: Self = "SDWebImageInternalLoadRequest"
}
