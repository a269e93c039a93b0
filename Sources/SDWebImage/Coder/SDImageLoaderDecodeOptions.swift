import Foundation
import SDCoders

/// What one subscriber of a load wants decoded, resolved from its options
/// and context: the coder options, the coder (`.imageCoder`), the animated
/// image class, scale, previews and callback queue. Downloads, cache reads
/// and the manager decode through it, so through the coders manager.
public struct SDImageLoaderDecodeOptions: Sendable {
    /// The C core's decode options (thumbnail, scale-down budget, orientation, limits).
    public var decode = DecodeOptions()
    /// Scale stamped on the image (1 = pixels are points).
    public var scaleFactor: Double = 1
    /// False: bytes only (`.avoidDecodeImage`).
    public var decodeImage = true
    /// Wants previews (`.progressiveLoad`).
    public var progressive = false
    /// Where this subscriber's callbacks run (nil: the downloader's queue).
    public var callbackQueue: SDCallbackQueue?
    /// `.imageCoder`: this coder decodes, without `canDecode`.
    public var coder: (any SDImageCoder)?
    /// `.imageDecodeOptions`: passed to the coder (the typed values above win).
    public var extraOptions: SDImageCoderOptions = [:]
    /// `.animatedImageClass`, and whether the result must be of it.
    public var animatedImageClass: SDAnimatedImage.Type?
    /// `.matchAnimatedImageClass`: fail the load unless the result is of that class.
    public var matchAnimatedImageClass = false
    /// Keep every frame of an animation before completing (`.preloadAllFrames`).
    public var preloadAllFrames = false
    /// The coders asked (tests and embedders may use a manager of their own).
    public var codersManager = SDImageCodersManager.shared

    /// The defaults: decode full size, no previews, the shared coders.
    public init() {}

    /// Same image would come out (so one decode serves both).
    func decodesLike(_ o: SDImageLoaderDecodeOptions) -> Bool {
        guard decodeImage == o.decodeImage else { return false }
        guard decodeImage else { return true }
        return decode == o.decode && coder === o.coder && extraOptions.isEmpty && o.extraOptions.isEmpty
            && animatedImageClass.map(ObjectIdentifier.init) == o.animatedImageClass.map(ObjectIdentifier.init)
            && matchAnimatedImageClass == o.matchAnimatedImageClass
            && preloadAllFrames == o.preloadAllFrames && codersManager === o.codersManager
    }

    /// The options a coder sees.
    public var coderOptions: SDImageCoderOptions {
        var o = extraOptions
        o[.decodeCoreOptions] = decode
        o[.decodeScaleFactor] = scaleFactor
        o[.decodeFirstFrameOnly] = decode.firstFrameOnly
        o[.decodePreserveAspectRatio] = decode.preserveAspectRatio
        o[.decodeScaleDownLimitBytes] = decode.scaleDownLimitBytes
        // a coder of one's own reads the box SDWebImage's way: the box's, or
        // a render's that is a plain fit or force
        if let t = decode.thumbnailPixelSize ?? decode.render?.box {
            o[.decodeThumbnailPixelSize] = CGSize(width: Double(t.width), height: Double(t.height))
            if decode.thumbnailPixelSize == nil { o[.decodePreserveAspectRatio] = decode.render?.resizingType == .fit }
        } else {
            o[.decodeThumbnailPixelSize] = nil
        }
        return o
    }

    /// The formats the C loop decodes as this load's bytes stream in (empty:
    /// none; the coders decode once the bytes are in): those a built-in
    /// answers for (`SDImageCodersManager.streamedFormats`, or `.imageCoder`'s
    /// own when it is a built-in).
    var streamedFormats: Set<ImageFormat> {
        guard decodeImage else { return [] }
        guard let coder else { return codersManager.streamedFormats }
        if let list = coder as? SDImageCodersManager { return list.streamedFormats }
        // an isolating coder decodes in its workers once the bytes are in
        return (coder as? SDImageCoreCoder).map { $0.isolation != nil ? [] : $0.decodableFormats.union([.unknown]) } ?? []
    }

    /// Decode whole data; `complete` is false when it ended early (a cache
    /// read treats that as a miss).
    func image(from data: Data) -> Result<(image: SDImage, complete: Bool), SDWebImageError> {
        let result = codersManager.decode(data, options: coderOptions, coder: coder)
        guard case .success(let r) = result else { return result }
        return finished(r.image, data).map { ($0, r.complete) }
    }

    /// The image for a decode the C loop made while the bytes streamed in.
    func image(fromTransfer d: DecodedImage, data: Data) -> Result<SDImage, SDWebImageError> {
        let core = (coder as? SDImageCoreCoder) ?? ((coder as? SDImageCodersManager) ?? codersManager).coreCoder(for: d.format)
        guard let core, core.decodableFormats.contains(d.format) else {
            return .failure(SDImageCodersManager.noCoder(for: d.format))
        }
        return finished(core.image(from: d, data: data, options: coderOptions), data)
    }

    /// The animated image class, and frames kept when asked.
    private func finished(_ image: SDImage, _ data: Data) -> Result<SDImage, SDWebImageError> {
        var image = image
        if let cls = animatedImageClass, type(of: image) != cls {
            if let made = cls.init(data: data, scale: scaleFactor, options: coderOptions) {
                image = made
            } else if matchAnimatedImageClass {
                return .failure(SDWebImageError(.badImageData, "the data does not decode to \(cls)"))
            }
        }
        if preloadAllFrames, let animated = image as? SDAnimatedImage { animated.preloadAllFrames() }
        return .success(image)
    }
}
