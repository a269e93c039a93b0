import Foundation
import SDCoders

/// The list of coders every decode and encode asks (SDWebImage's
/// `SDImageCodersManager`): the last added is asked first, so a coder of
/// yours comes before the built-ins for the data it claims. Itself a coder.
///
/// Built-ins, asked in this order: AVIF, WebP, APNG (all PNGs), GIF, then
/// `SDImageIOCoder` (JPEG, PNG). While only built-ins are listed, a download
/// decodes on the C loop's workers as the bytes arrive; with a coder of
/// yours in the list, it decodes through the list once the bytes are in
/// (previews from a progressive coder as they arrive).
public final class SDImageCodersManager: SDImageCoder, @unchecked Sendable {
    /// The manager the library decodes and encodes through; add your coders here.
    public static let shared = SDImageCodersManager()

    private let lock = NSLock()
    private var _coders: [any SDImageCoder]

    /// A manager with the built-in coders: JPEG/PNG, GIF, APNG, WebP, AVIF.
    public init() {
        _coders = [SDImageIOCoder.shared, SDImageGIFCoder.shared, SDImageAPNGCoder.shared,
                   SDImageWebPCoder.shared, SDImageAVIFCoder.shared]
    }

    /// All coders, first added first (the last is asked first).
    public var coders: [any SDImageCoder] {
        get { lock.lock(); defer { lock.unlock() }; return _coders }
        set { lock.lock(); _coders = newValue; lock.unlock() }
    }

    /// Add `coder` as the first one asked (moved there if it was listed).
    public func addCoder(_ coder: any SDImageCoder) {
        lock.lock()
        _coders.removeAll { $0 === coder }
        _coders.append(coder)
        lock.unlock()
    }

    /// Remove `coder` (by identity).
    public func removeCoder(_ coder: any SDImageCoder) {
        lock.lock()
        _coders.removeAll { $0 === coder }
        lock.unlock()
    }

    /// In asking order.
    var asked: [any SDImageCoder] { coders.reversed() }

    // MARK: - SDImageCoder

    public func canDecode(from data: Data?) -> Bool {
        asked.contains { $0.canDecode(from: data) }
    }

    public func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? {
        guard let data else { return nil }
        return asked.first { $0.canDecode(from: data) }?.decodedImage(with: data, options: options)
    }

    /// Whether any coder writes `format`.
    public func canEncode(to format: SDImageFormat) -> Bool {
        asked.contains { $0.canEncode(to: format) }
    }

    public func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? {
        guard let image else { return nil }
        let target = format == .undefined ? (image.hasAlpha ? .png : .jpeg) : format
        return asked.first { $0.canEncode(to: target) }?.encodedData(with: image, format: target, options: options)
    }

    // MARK: - For the layers above

    /// Only built-in coders are listed: the C loop may decode as bytes stream in.
    var decodesInCore: Bool { coders.allSatisfy { $0 is SDImageCoreCoder } }

    /// The built-in coder that answers for `format` (nil: no coder listed decodes it).
    func coreCoder(for format: ImageFormat) -> SDImageCoreCoder? {
        for c in asked {
            if let core = c as? SDImageCoreCoder, type(of: core).decodableFormats.contains(format) { return core }
        }
        return nil
    }

    /// The error when no listed coder claims data of `format`.
    static func noCoder(for format: ImageFormat) -> SDWebImageError {
        let what = format == .unknown ? "data that is not an image this build knows" : "\(format.name) data"
        return SDWebImageError(.badImageData, "no coder decodes \(what)")
    }

    /// Decode with `coder` (no `canDecode` check, as `.imageCoder`) or the
    /// first listed coder that claims the data; says why when it fails, and
    /// whether the data was whole.
    func decode(_ data: Data, options: SDImageCoderOptions,
                coder: (any SDImageCoder)? = nil) -> Result<(image: SDImage, complete: Bool), SDWebImageError> {
        guard let c = coder ?? asked.first(where: { $0.canDecode(from: data) }) else {
            return .failure(Self.noCoder(for: ImageFormat(data: data)))
        }
        if let core = c as? SDImageCoreCoder {
            do throws(CoderError) {
                return .success(try core.decode(data, options: options))
            } catch {
                return .failure(SDWebImageError(.badImageData, error.message, underlyingError: error))
            }
        }
        guard let image = c.decodedImage(with: data, options: options) else {
            return .failure(SDWebImageError(.badImageData, "\(type(of: c)) returned no image"))
        }
        guard image.width > 0, image.height > 0 else {
            return .failure(SDWebImageError(.badImageData, "the image has no pixels"))
        }
        return .success((image, true))
    }
}
