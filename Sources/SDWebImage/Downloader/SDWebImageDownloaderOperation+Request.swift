import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

extension SDWebImageDownloaderOperation {
    // MARK: - Request

    /// Status and content type are checked here, not by the C loop, when a
    /// response modifier may change them or the codes are not one range.
    static func checksInSwift(_ env: SDWebImageDownloaderOperationEnvironment) -> Bool {
        if env.responseModifier != nil { return true }
        guard let codes = env.acceptableStatusCodes else { return false }
        guard let lo = codes.first, let hi = codes.last else { return true }
        return codes.count != hi - lo + 1
    }

    /// Every format the core decodes, and data it does not recognise.
    static let everyFormat = Set(ImageFormat.allCases.filter { $0.capabilities.contains(.decode) }).union([.unknown])

    func makeRequest(_ first: SDImageLoaderDecodeOptions) -> DownloadRequest? {
        guard let r = request, let url = r.url, (r.httpMethod ?? "GET").uppercased() == "GET" else { return nil }
        var d = env.requestTemplate  // policy, limits, timeouts, proxy, credentials
        d.url = url
        d.priority = options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
        d.timeout = r.timeoutInterval
        for (k, v) in r.allHTTPHeaderFields ?? [:] { d.headers[k] = v }
        d.handlesCookies = options.contains(.handleCookies)
        d.allowsInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
        d.decode = decodesInTransfer
        d.decodeOptions = first.decode
        if decodesInTransfer, !streamedFormats.isSuperset(of: Self.everyFormat) {
            d.decodeOptions.formats = streamedFormats  // the others are declined: a user's coder takes them
        }
        d.progressivePreviews = decodesInTransfer && options.contains(.progressiveLoad)
        // a thumbnail of a progressive JPEG ends its transfer once settled,
        // unless something needs every byte (the HTTP cache, a decryptor,
        // checks and modifiers of the user's)
        let thumbnail = first.decode.thumbnailPixelSize != nil || first.decode.render != nil
        if decodesInTransfer, thumbnail, env.settleLevels >= 0, !options.contains(.fetchWholeFile),
           !options.contains(.useHTTPCache), env.decryptor == nil, !checksInSwift {
            d.endsWhenSettled = true
            d.decodeOptions.settleLevels = env.settleLevels
        }
        if checksInSwift {
            d.acceptableStatusCodes = 0...999
        } else {
            if let codes = env.acceptableStatusCodes, let lo = codes.first, let hi = codes.last {
                d.acceptableStatusCodes = lo...hi
            } else {
                d.acceptableStatusCodes = 0...999
            }
            d.acceptableContentTypes = env.acceptableContentTypes.map { Array($0).sorted() }
        }
        // the HTTP cache's entry, else the manager's (.refreshCached): one validator type
        if let v = validators?.validators ?? context?[.httpValidators] as? SDWebImageHTTPValidators {
            d.ifNoneMatch = v.etag
            d.ifModifiedSince = v.lastModified
        } else {
            // the first bytes are here (a thumbnail's early end, from the
            // disk cache; or an earlier try that broke off): ask for the rest
            d.resume = context?[.resumeData] as? ResumableData ?? env.resumable?.take(url)
        }
        return d
    }
}
