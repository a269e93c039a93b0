import Foundation
import SDCoders
import SDSync

/// The list of coders every decode and encode asks (SDWebImage's
/// `SDImageCodersManager`): the last added is asked first, so a coder of
/// yours comes before the built-ins for the data it claims. Itself a coder.
///
/// Built-ins, derived from the C core's codec rows and asked in this order:
/// a `SDImageCoreCoder(format:)` for each format the core writes or reads
/// beyond SDWebImage's, AVIF, WebP, APNG (all PNGs), GIF, then
/// `SDImageIOCoder` (JPEG, PNG). A download of a format a built-in answers
/// for decodes on the C loop's workers as the bytes arrive; a coder of yours
/// takes the formats it names (`claimedFormats`), which decode through the
/// list once the bytes are in (previews from a progressive coder as they
/// arrive) — a coder that names none takes them all.
public final class SDImageCodersManager: SDImageCoder, Sendable {
    /// The manager the library decodes and encodes through; add your coders here.
    public static let shared = SDImageCodersManager()

    private let list: PriorityList<any SDImageCoder>

    /// A manager with the built-in coders: one for each format this build's
    /// C core decodes or encodes (JPEG/PNG, GIF, APNG, WebP, AVIF, …).
    public init() {
        list = PriorityList(SDImageCoreCoder.builtIns)
    }

    /// All coders, first added first (the last is asked first).
    public var coders: [any SDImageCoder] {
        get { list.all }
        set { list.all = newValue }
    }

    /// Add `coder` as the first one asked (moved there if it was listed).
    public func addCoder(_ coder: any SDImageCoder) { list.add(coder, moving: true) }

    /// Remove `coder` (by identity).
    public func removeCoder(_ coder: any SDImageCoder) { list.remove(coder) }

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

    /// The formats a download streams into the C core's decoder: those a
    /// built-in is the first to claim, asking in order. A coder of yours
    /// takes the formats it names (`.unknown` in the result: no coder of
    /// yours claims data the core does not recognise, so such data fails at
    /// once); one that names none may claim anything, so from it on nothing
    /// streams.
    var streamedFormats: Set<ImageFormat> {
        var open = Set(ImageFormat.allCases.filter { $0.capabilities.contains(.decode) })
        var streamed: Set<ImageFormat> = [], custom = false
        for c in asked {
            if let core = c as? SDImageCoreCoder {
                streamed.formUnion(open.intersection(core.decodableFormats))
                open.subtract(core.decodableFormats)
            } else if let claimed = c.claimedFormats {
                open.subtract(claimed)
                custom = custom || claimed.contains { !$0.isCore || $0 == .unknown }
            } else {
                return streamed.isEmpty || custom ? streamed : streamed.union([.unknown])
            }
        }
        return streamed.isEmpty || custom ? streamed : streamed.union([.unknown])
    }

    /// The built-in coder that answers for `format` (nil: no coder listed decodes it).
    func coreCoder(for format: ImageFormat) -> SDImageCoreCoder? {
        for c in asked {
            if let core = c as? SDImageCoreCoder, core.decodableFormats.contains(format) { return core }
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
