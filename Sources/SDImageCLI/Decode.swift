import ArgumentParser
import Foundation
import SDCoders

/// `sdimage decode FILE`: decode a JPEG or PNG the way the library does.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a JPEG or PNG to premultiplied BGRA (raw) or PNG.",
        discussion: """
            The last line on stderr is WIDTHxHEIGHT, the format and the EXIF
            orientation, plus 'incomplete' when the file was truncated (what
            could be decoded is still written). Raw output is row-major
            premultiplied ARGB32 in native byte order, stride = width*4.
            """)

    @Argument(help: "The image file ('-' for standard input).")
    var file: String

    @Option(help: "Longest side of the output, in pixels (decode-time downscaling).")
    var maxPixelSize: Int?

    @Option(help: "Byte budget for the decoded bitmap (scale down large images).")
    var maxBytes: Int?

    @Flag(help: "Report the EXIF orientation but do not apply it.")
    var noOrientation = false

    @Option(help: "Write the raw BGRA bytes to PATH ('-' for standard output).")
    var raw: String?

    @Option(help: "Write the decoded image as a PNG file.")
    var png: String?

    func validate() throws {
        if let m = maxPixelSize, m <= 0 { throw ValidationError("--max-pixel-size must be positive") }
        if let m = maxBytes, m <= 0 { throw ValidationError("--max-bytes must be positive") }
    }

    func run() throws {
        let input: Data
        do {
            input = file == "-" ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            fail("cannot read \(file): \(error.localizedDescription)")
        }
        var options = DecodeOptions()
        if let m = maxPixelSize { options.thumbnailPixelSize = (m, m) }
        if let b = maxBytes { options.scaleDownLimitBytes = b }
        options.applyOrientation = !noOrientation

        let result: Result<DecodedImage, CoderError> = input.withUnsafeBytes { raw in
            Result { () throws(CoderError) in try ImageDecoder.decode(raw, options: options) }
        }
        let image: DecodedImage
        switch result {
        case .success(let decoded): image = decoded
        case .failure(let error): fail("\(file): \(error.message)")
        }
        let bitmap = image.bitmap
        if let raw {
            bitmap.withUnsafeBytes { bytes in
                let data = Data(bytes)
                if raw == "-" {
                    FileHandle.standardOutput.write(data)
                } else if !FileManager.default.createFile(atPath: raw, contents: data) {
                    fail("cannot write \(raw)")
                }
            }
        }
        if let png {
            do {
                let data = Data(try bitmap.pngData())
                try data.write(to: URL(fileURLWithPath: png))
            } catch {
                fail("cannot write \(png): \(error)")
            }
        }
        var line = "\(bitmap.width)x\(bitmap.height) \(image.format) orientation=\(image.orientation)"
        if !image.isComplete { line += " incomplete" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// One line on stderr, exit status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("sdimage: " + message + "\n").utf8))
    Foundation.exit(1)
}
