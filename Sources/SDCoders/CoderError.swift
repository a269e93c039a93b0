import CSDCore

/// An error from the C core: its stable status code plus the detail message
/// (libjpeg's or libpng's own words where there are any).
public struct CoderError: Error, Equatable, CustomStringConvertible, Sendable {
    /// A C status code (`sd_status`). Modelled as a struct with static members,
    /// not a closed enum, so new C codes never break Swift callers.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        init(_ status: sd_status) { self.rawValue = status.rawValue }

        public static let needMoreInput = Code(SD_EAGAIN)
        public static let invalidArgument = Code(SD_EINVAL)
        public static let outOfMemory = Code(SD_ENOMEM)
        public static let unsupportedFormat = Code(SD_EUNSUPPORTED)
        public static let corruptData = Code(SD_ECORRUPT)
        public static let imageTooLarge = Code(SD_ETOOLARGE)
        public static let truncatedHeader = Code(SD_ETRUNCATED)
        public static let badState = Code(SD_EBADSTATE)
        public static let noMoreOutput = Code(SD_EOI)
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, message: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: sd_strerror(code.rawValue))
    }

    public var description: String { message }

    /// Throw for any negative C status.
    static func check(_ status: Int32, _ detail: @autoclosure () -> String? = nil) throws(CoderError) {
        if status < 0 { throw CoderError(Code(rawValue: status), message: detail()) }
    }
}
