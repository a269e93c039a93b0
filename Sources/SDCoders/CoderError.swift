import CSDCore

/// A C status code (`sd_status`): the one Swift mapping of the core's codes,
/// shared by `CoderError` and SDDownloader's `DownloadError`. A struct with
/// static members, not a closed enum, so new C codes never break callers.
public struct SDStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public init(_ status: sd_status) { self.rawValue = status.rawValue }

    /// The core's own words for it (`sd_strerror`).
    public var description: String { String(cString: sd_strerror(rawValue)) }

    // decoding
    public static let needMoreInput = SDStatus(SD_EAGAIN)
    public static let invalidArgument = SDStatus(SD_EINVAL)
    public static let outOfMemory = SDStatus(SD_ENOMEM)
    public static let unsupportedFormat = SDStatus(SD_EUNSUPPORTED)
    public static let corruptData = SDStatus(SD_ECORRUPT)
    public static let imageTooLarge = SDStatus(SD_ETOOLARGE)
    public static let truncatedHeader = SDStatus(SD_ETRUNCATED)
    public static let badState = SDStatus(SD_EBADSTATE)
    public static let noMoreOutput = SDStatus(SD_EOI)
    public static let io = SDStatus(SD_EIO)
    // transfers
    /// A request the loop refuses (`SD_EINVAL`, as `invalidArgument`).
    public static let invalidRequest = SDStatus(SD_EINVAL)
    public static let cancelled = SDStatus(SD_ECANCELLED)
    public static let timedOut = SDStatus(SD_ETIMEDOUT)
    public static let cannotResolveHost = SDStatus(SD_ERESOLVE)
    public static let cannotConnect = SDStatus(SD_ECONNECT)
    public static let tls = SDStatus(SD_ETLS)
    public static let badStatus = SDStatus(SD_EHTTPSTATUS)
    public static let notModified = SDStatus(SD_ENOTMODIFIED)
    public static let badContentType = SDStatus(SD_ECONTENTTYPE)
    public static let tooLarge = SDStatus(SD_ETOOBIG)
    public static let truncatedBody = SDStatus(SD_EBODY)
    public static let tooManyRedirects = SDStatus(SD_EREDIRECT)
    public static let network = SDStatus(SD_ENETWORK)
    public static let decodeFailed = SDStatus(SD_EDECODE)
    public static let shuttingDown = SDStatus(SD_ESHUTDOWN)
    /// The URL's scheme (or a redirect's) is not allowed.
    public static let schemeNotAllowed = SDStatus(SD_ESCHEME)
    /// Malformed or relative URL.
    public static let badURL = SDStatus(SD_EURL)
    /// The server's reply is not well-formed HTTP (status line, oversized header).
    public static let badServerResponse = SDStatus(SD_EPROTOCOL)
    /// A file URL names a FIFO, device or directory.
    public static let notRegularFile = SDStatus(SD_ENOTFILE)
    /// Refused by the request's `URLPolicy` (host, address, downgrade).
    public static let refusedByPolicy = SDStatus(SD_EPOLICY)
}

/// An error from the C core: its stable status code plus the detail message
/// (libjpeg's or libpng's own words where there are any).
public struct CoderError: Error, Equatable, CustomStringConvertible, Sendable {
    public typealias Code = SDStatus

    public let code: Code
    public let message: String

    public init(_ code: Code, message: String? = nil) {
        self.code = code
        self.message = message ?? code.description
    }

    public var description: String { message }

    /// Throw for any negative C status.
    static func check(_ status: Int32, _ detail: @autoclosure () -> String? = nil) throws(CoderError) {
        if status < 0 { throw CoderError(Code(rawValue: status), message: detail()) }
    }
}
