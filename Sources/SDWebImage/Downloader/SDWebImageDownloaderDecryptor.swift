import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns the downloaded bytes into image bytes; nil fails with `badImageData`.
/// A decryptor turns progressive decoding off (the bytes are not an image yet).
public protocol SDWebImageDownloaderDecryptorProtocol: Sendable {
    /// The image bytes hidden in `data`; nil fails the download.
    func decryptedData(with data: Data, response: URLResponse?) -> Data?
}

/// A decryptor from a closure.
public struct SDWebImageDownloaderDecryptor: SDWebImageDownloaderDecryptorProtocol {
    private let block: @Sendable (Data, URLResponse?) -> Data?
    /// A decryptor that asks `block` (the bytes and the response).
    public init(block: @escaping @Sendable (Data, URLResponse?) -> Data?) { self.block = block }
    /// What the block answers.
    public func decryptedData(with data: Data, response: URLResponse?) -> Data? { block(data, response) }

    /// Bytes that arrive base64-encoded.
    public static let base64 = SDWebImageDownloaderDecryptor { data, _ in
        Data(base64Encoded: data, options: .ignoreUnknownCharacters)
    }
}
