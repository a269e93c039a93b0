import CSDCore
import Foundation
import SDCoders

/// The C core's version ("MAJOR.MINOR.PATCH", as linked), for User-Agent strings and logs.
public let sdCoreVersion = String(cString: sd_version_string())

/// A failed download: the stable C status, its detail, and the HTTP status
/// when the server answered.
public struct DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C status (`SDStatus`, SDCoders' one mapping of `sd_status`).
    public typealias Code = SDStatus

    /// What went wrong, as the C core classifies it (timeout, TLS, HTTP status, too big…).
    public let code: Code
    /// A readable detail: the core's message for this transfer, or the code's description.
    public let message: String
    /// The HTTP status, when a response arrived.
    public let statusCode: Int?
    /// What arrived before the connection failed, when the server can send
    /// the rest (a strong validator and byte ranges): give it to the next
    /// request's `resume`.
    public var resumable: ResumableData?

    /// An error with `code`; `message` defaults to the code's description.
    public init(_ code: Code, message: String? = nil, statusCode: Int? = nil) {
        self.code = code
        self.message = message ?? code.description
        self.statusCode = statusCode
    }

    /// The message.
    public var description: String { message }
}
