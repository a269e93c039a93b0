import CSDCore

/// A C status code (`sd_status`): the one Swift mapping of the core's codes,
/// shared by `CoderError` and SDDownloader's `DownloadError`. A struct with
/// static members, not a closed enum, so new C codes never break callers.
public struct SDStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The status for a C `sd_status` value.
    public init(_ status: sd_status) { self.rawValue = status.rawValue }

    /// The core's own words for it (`sd_strerror`).
    public var description: String { String(cString: sd_strerror(rawValue)) }

    // decoding
    /// Not available yet: the decoder needs more bytes (`SD_EAGAIN`).
    public static let needMoreInput = SDStatus(SD_EAGAIN)
    /// An argument out of range or missing (`SD_EINVAL`).
    public static let invalidArgument = SDStatus(SD_EINVAL)
    /// An allocation failed (`SD_ENOMEM`).
    public static let outOfMemory = SDStatus(SD_ENOMEM)
    /// Not a format (or a variant of one) the core decodes (`SD_EUNSUPPORTED`).
    public static let unsupportedFormat = SDStatus(SD_EUNSUPPORTED)
    /// The image data is corrupt (`SD_ECORRUPT`).
    public static let corruptData = SDStatus(SD_ECORRUPT)
    /// The image's dimensions exceed the configured limits (`SD_ETOOLARGE`).
    public static let imageTooLarge = SDStatus(SD_ETOOLARGE)
    /// The input ended before the image header was complete (`SD_ETRUNCATED`).
    public static let truncatedHeader = SDStatus(SD_ETRUNCATED)
    /// A call out of order, or on a handle that failed earlier (`SD_EBADSTATE`).
    public static let badState = SDStatus(SD_EBADSTATE)
    /// Nothing more to take: the result was already taken (`SD_EOI`).
    public static let noMoreOutput = SDStatus(SD_EOI)
    /// A file or system I/O error (`SD_EIO`).
    public static let io = SDStatus(SD_EIO)
    // transfers
    /// A request the loop refuses (`SD_EINVAL`, as `invalidArgument`).
    public static let invalidRequest = SDStatus(SD_EINVAL)
    /// Cancelled by the caller or by shutdown (`SD_ECANCELLED`).
    public static let cancelled = SDStatus(SD_ECANCELLED)
    /// Timed out: idle too long, over the total timeout, or below the low-speed floor (`SD_ETIMEDOUT`).
    public static let timedOut = SDStatus(SD_ETIMEDOUT)
    /// The host name did not resolve (`SD_ERESOLVE`).
    public static let cannotResolveHost = SDStatus(SD_ERESOLVE)
    /// No connection could be made (`SD_ECONNECT`).
    public static let cannotConnect = SDStatus(SD_ECONNECT)
    /// The TLS handshake or certificate verification failed (`SD_ETLS`).
    public static let tls = SDStatus(SD_ETLS)
    /// The response status is not an acceptable one (`SD_EHTTPSTATUS`); the error carries it.
    public static let badStatus = SDStatus(SD_EHTTPSTATUS)
    /// 304: the cached copy is still valid (`SD_ENOTMODIFIED`), the answer to a conditional request.
    public static let notModified = SDStatus(SD_ENOTMODIFIED)
    /// The response's content type is not an acceptable one (`SD_ECONTENTTYPE`).
    public static let badContentType = SDStatus(SD_ECONTENTTYPE)
    /// The body exceeds the request's maximum size (`SD_ETOOBIG`).
    public static let tooLarge = SDStatus(SD_ETOOBIG)
    /// The body ended early or the connection was lost mid-body (`SD_EBODY`).
    public static let truncatedBody = SDStatus(SD_EBODY)
    /// More redirects than the request allows (`SD_EREDIRECT`).
    public static let tooManyRedirects = SDStatus(SD_EREDIRECT)
    /// Another network or protocol failure (`SD_ENETWORK`).
    public static let network = SDStatus(SD_ENETWORK)
    /// The transfer finished but the body did not decode (`SD_EDECODE`).
    public static let decodeFailed = SDStatus(SD_EDECODE)
    /// The loop is shutting down and refused the request (`SD_ESHUTDOWN`).
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
    // isolated decoding
    /// A decode in a `DecoderIsolation` worker went over its CPU, wall-time or
    /// memory limit, or its sandbox stopped it: the worker was killed, the
    /// source's doing (`SD_ELIMIT`).
    public static let overLimit = SDStatus(SD_ELIMIT)
}

/// An error from the C core: its stable status code plus the detail message
/// (libjpeg's or libpng's own words where there are any).
public struct CoderError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The status type (shared with `DownloadError`).
    public typealias Code = SDStatus

    /// What went wrong, as the C core classifies it.
    public let code: Code
    /// The decoder's own words where there are any, else the code's description.
    public let message: String

    /// An error with `code`; `message` defaults to the code's description.
    public init(_ code: Code, message: String? = nil) {
        self.code = code
        self.message = message ?? code.description
    }

    /// The message.
    public var description: String { message }

    /// Throw for any negative C status.
    static func check(_ status: Int32, _ detail: @autoclosure () -> String? = nil) throws(CoderError) {
        if status < 0 { throw CoderError(Code(rawValue: status), message: detail()) }
    }
}
