import ArgumentParser
import Foundation
import SDCoders
import SDWebImage

/// `sdimage decode FILE`: decode an image (JPEG, PNG/APNG, GIF, WebP, AVIF) the way the library does.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an image (JPEG, PNG, GIF, ...) to premultiplied BGRA (raw) or PNG.",
        discussion: """
            The last line on stderr is WIDTHxHEIGHT, the format and the EXIF
            orientation, plus 'incomplete' when the file was truncated (what
            could be decoded is still written). Raw output is row-major
            premultiplied ARGB32 in native byte order, stride = width*4.

            With --frames every frame of an animation (one for a still image)
            is written, fully composited on the canvas, one after another;
            stderr gets one line per frame, 'frame N WxH D raw=R' (D the
            duration shown in ms, R the stored one), then 'loop N' (0 =
            forever). A damaged file writes the frames it has; the exit
            status says whether all of them could be decoded.
            """)

    @Argument(help: "The image file ('-' for standard input).")
    var file: String

    @Option(help: "Longest side of the output, in pixels (decode-time downscaling).")
    var maxPixelSize: Int?

    @Option(help: "Byte budget for the decoded bitmap (scale down large images).")
    var maxBytes: Int?

    @Option(help: "The filter that brings the image to --max-pixel-size or --max-bytes: lanczos3 (default), mitchell, catmull-rom, bilinear, box.")
    var filter: String?

    @Flag(help: "Resample in linear light (sRGB decoded, filtered, encoded again).")
    var linear = false

    @Option(help: "Shrink on load (JPEG DCT scaling, PNG/WebP) only down to N times the output, 1...8 (default 2; 1 = all the way, fastest).")
    var shrinkMargin: Int?

    @Flag(help: "Report the EXIF orientation but do not apply it.")
    var noOrientation = false

    @Flag(help: "Leave the colours as stored: no conversion to sRGB of an ICC profile, PNG gAMA/cHRM or AVIF's coded primaries (the oracle corpora's convention); --out and --png then embed the source's profile.")
    var keepSourceColors = false

    @Option(help: "Write the raw BGRA bytes to PATH ('-' for standard output).")
    var raw: String?

    @Option(help: "Write the decoded image as a PNG file.")
    var png: String?

    @Flag(help: "Every frame of an animation, composited (with --raw: all of them, in order).")
    var frames = false

    @Option(help: "Convert: write the image encoded as the extension says (any format this build writes: .jpg, .png, .webp, .avif, .gif, ...); an animation stays one where the format has animations (.gif, .png as APNG, .webp, .avif).")
    var out: String?

    @Option(help: "With --out: quality 0...100 for a lossy format (JPEG, WebP, AVIF, HEIC, JPEG XL; AVIF and JPEG XL 100 are lossless). Default 90.")
    var quality: Int?

    @Flag(help: "With --out: lossless (WebP, AVIF, HEIC, JPEG XL).")
    var lossless = false

    @Option(help: "With --out: the highest quality whose file is at most this many bytes.")
    var maxFileSize: Int?

    func validate() throws {
        if let m = maxPixelSize, m <= 0 { throw ValidationError("--max-pixel-size must be positive") }
        if let m = maxBytes, m <= 0 { throw ValidationError("--max-bytes must be positive") }
        try validateFilter(filter)
        if let m = shrinkMargin, !(1...8).contains(m) { throw ValidationError("--shrink-margin must be 1...8") }
        if let q = quality, !(0...100).contains(q) { throw ValidationError("--quality must be 0...100") }
        if let m = maxFileSize, m <= 0 { throw ValidationError("--max-file-size must be positive") }
        if out != nil && frames { throw ValidationError("--out writes one image; drop --frames") }
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
        options.resampling = resampling
        options.colorManagement = keepSourceColors ? .keepSource : .convertToSRGB
        options.applyOrientation = !noOrientation
        if frames { decodeFrames(input, options: options) }
        if let out {
            convert(input, options: options, to: out)
            return
        }

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
            // straight from the bitmap: no second full-size copy (under a
            // memory limit that copy is what would not fit)
            let out: FileHandle?
            if raw == "-" {
                out = FileHandle.standardOutput
            } else if FileManager.default.createFile(atPath: raw, contents: nil) {
                out = FileHandle(forWritingAtPath: raw)
            } else {
                out = nil
            }
            guard let out else { fail("cannot write \(raw)") }
            bitmap.withUnsafeBytes { bytes in
                do { try out.write(contentsOf: bytes) } catch {
                    fail("cannot write \(raw): \(error.localizedDescription)")
                }
            }
            if out !== FileHandle.standardOutput { try? out.close() }
        }
        if let png {
            do {
                let data = Data(try bitmap.encoded(as: .png, options: EncodeOptions(iccProfile: image.iccProfile)))
                try data.write(to: URL(fileURLWithPath: png))
            } catch {
                fail("cannot write \(png): \(error)")
            }
        }
        var line = "\(bitmap.width)x\(bitmap.height) \(image.format) orientation=\(image.orientation)"
        if image.sourceColorSpace != .sRGB { line += " colors=\(image.sourceColorSpace)" }
        if !image.isComplete { line += " incomplete" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// `--filter NAME` of `decode` and `fetch`: a usage error naming the filters.
func validateFilter(_ name: String?) throws {
    if let name, Resampling.Filter(name: name) == nil {
        throw ValidationError("--filter must be one of \(Resampling.Filter.allCases.map(\.name).joined(separator: ", "))")
    }
}

extension Decode {
    /// `--filter`, `--linear`, `--shrink-margin`.
    var resampling: Resampling {
        Resampling(filter: filter.flatMap(Resampling.Filter.init(name:)) ?? .lanczos3, linearLight: linear,
                   shrinkOnLoadMargin: shrinkMargin ?? 2)
    }

    /// `--out`: through the coders manager, as the library stores derived images.
    func convert(_ input: Data, options: DecodeOptions, to path: String) {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        let writable = SDImageFormat.allCases.filter { $0.capabilities.contains(.encode) }
        guard let format = SDImageFormat(fileExtension: ext), writable.contains(format) else {
            fail("\(path): unknown extension (\(writable.map(\.description).joined(separator: ", ")))")
        }
        guard SDImageCodersManager.shared.canEncode(to: format) else { fail("no encoder for \(format) in this build") }
        var o: SDImageCoderOptions = [.encodeCompressionQuality: Double(quality ?? 90) / 100]
        let image: SDImage
        if format.capabilities.contains(.encodeAnimation), let anim = SDAnimatedImage(data: input),
           anim.animatedImageFrameCount > 1 {
            image = anim  // GIF, WebP, APNG and AVIF keep every frame; the size limit applies to each
            if let m = maxPixelSize { o[.encodeMaxPixelSize] = m }
        } else {
            do {
                image = try SDImage.decode(input, options: options)
            } catch {
                fail("\(file): \(error.description)")
            }
        }
        if lossless { o[.encodeWebPLossless] = true }
        if let maxFileSize { o[.encodeMaxFileSize] = maxFileSize }
        guard let data = SDImageCodersManager.shared.encodedData(with: image, format: format, options: o) else {
            fail("\(path): the image could not be encoded as \(format)")
        }
        do { try data.write(to: URL(fileURLWithPath: path)) } catch { fail("cannot write \(path): \(error)") }
        var animated = !image.sd_isAnimated ? ""
            : format.capabilities.contains(.encodeAnimation) ? " (\(image.sd_imageFrameCount) frames)" : " (first of \(image.sd_imageFrameCount) frames)"
        if let maxFileSize, data.count > maxFileSize { animated += " (over --max-file-size even at the lowest quality)" }
        FileHandle.standardError.write(Data("\(image.width)x\(image.height) \(image.format) -> \(format) \(data.count) bytes\(animated)\n".utf8))
    }

    /// `--frames`: the corpus-anim protocol (../shared/corpus-anim/README.md).
    func decodeFrames(_ input: Data, options: DecodeOptions) -> Never {
        let err = FileHandle.standardError
        let out: FileHandle?
        if let raw {
            if raw == "-" {
                out = FileHandle.standardOutput
            } else if FileManager.default.createFile(atPath: raw, contents: nil),
                      let h = FileHandle(forWritingAtPath: raw) {
                out = h
            } else {
                fail("cannot write \(raw)")
            }
        } else {
            out = nil
        }
        let made: Result<ImageDecoder, CoderError> = Result { () throws(CoderError) in
            let decoder = try ImageDecoder(options: options)
            let pushed: Result<Void, CoderError> = input.withUnsafeBytes { b in
                Result { () throws(CoderError) in try decoder.push(b) }
            }
            try pushed.get()
            try decoder.endInput()
            return decoder
        }
        let decoder: ImageDecoder
        switch made {
        case .success(let d): decoder = d
        case .failure(let error): fail("\(file): \(error.message)")
        }
        var index = 0
        var status: Int32 = 0
        while true {
            // each frame lent by the decoder (its canvas, not a copy) and written out
            let size: (width: Int, height: Int)?
            var writeError: (any Error)?
            do {
                size = try decoder.withFrame(at: index) { f in
                    do { try out?.write(contentsOf: f.bytes) } catch { writeError = error }
                    return (f.width, f.height)
                }
            } catch {
                err.write(Data("sdimage: \(file): \(error.message)\n".utf8))
                status = 1
                break
            }
            if let writeError { fail("cannot write \(raw ?? "-"): \(writeError.localizedDescription)") }
            guard let size else { break }
            let shown = Int(((decoder.frameDuration(at: index) ?? 0) * 1000).rounded())
            let stored = decoder.storedFrameDuration(at: index) ?? 0
            err.write(Data("frame \(index) \(size.width)x\(size.height) \(shown) raw=\(stored)\n".utf8))
            index += 1
        }
        err.write(Data("loop \(decoder.loopCount ?? 1)\n".utf8))
        if index == 0 && status == 0 {
            err.write(Data("sdimage: \(file): no frame could be decoded\n".utf8))
            status = 1
        }
        if let out, out !== FileHandle.standardOutput { try? out.close() }
        Foundation.exit(status)
    }
}

/// One line on stderr, exit status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("sdimage: " + message + "\n").utf8))
    Foundation.exit(1)
}
