import ArgumentParser
import Foundation
import SDSync
import SDWebImage

/// `sdimage bench serve`: the render floor of `sdimage serve` — the same
/// decode (thumbnail box, shrink on load, Lanczos-3) and encode, from
/// memory, on `--threads` threads, no HTTP. `make bench-serve`
/// (scripts/bench-serve.sh) runs it in the same run as the HTTP rows
/// against thumbor.
struct BenchServe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "sdimage serve's render floor: fit-in thumbnails decoded and encoded from memory on N threads, images/s.")

    @Option(help: "Folder of source images (every file is read into memory first).")
    var dir: String
    @Option(help: "The box, pixels.")
    var box = 256
    @Option(help: "How the box is met, as sdimage serve's render plan: fit (rs:fit), fill (rs:fill, the middle kept) or crop (c:0.5:0.5 then rs:fit).")
    var resize = "fit"
    @Option(help: "The cut's gravity for fill: ce (the middle) or sm (smart: where the image is busiest).")
    var gravity = "ce"
    @Option(help: "Output format: webp, jpeg, png or avif.")
    var format = "webp"
    @Option(help: "Quality of lossy output, 1...100.")
    var quality = 80
    @Option(help: "Threads rendering at once.")
    var threads = 2
    @Option(help: "Shrink on load only down to N times the box, 1...8 (sdimage serve --shrink-margin).")
    var shrinkMargin = 2
    @Option(help: "Timed rounds; the median is reported.")
    var rounds = 3
    @Flag(help: "Decode in sandboxed worker processes, as sdimage serve does by default (one worker a thread).")
    var isolateDecoders = false
    @Flag(help: "One JSON object on stdout.")
    var json = false

    func run() throws {
        let fmt: SDImageFormat = switch format {
        case "webp": .webP
        case "jpeg", "jpg": .jpeg
        case "png": .png
        case "avif": .avif
        default: throw ValidationError("--format: webp, jpeg, png or avif")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        let sources = names.compactMap { FileManager.default.contents(atPath: dir + "/" + $0) }
        guard !sources.isEmpty else { throw ValidationError("--dir: no files in \(dir)") }
        guard (1...8).contains(shrinkMargin) else { throw ValidationError("--shrink-margin: 1...8") }
        var core = DecodeOptions()
        core.resampling = Resampling(shrinkOnLoadMargin: shrinkMargin)
        // the plan sdimage serve hands the decoder for rs:fit, rs:fill or c:0.5:0.5/rs:fit
        var plan = RenderPlan(width: box, height: box, resizingType: resize == "fill" ? .fill : .fit)
        switch resize {
        case "fit", "fill": break
        case "crop": plan.crop = RenderPlan.Crop(width: 0.5, height: 0.5)
        default: throw ValidationError("--resize: fit, fill or crop")
        }
        switch gravity {
        case "ce": break
        case "sm": plan.gravity = RenderPlan.Gravity(.smart)
        default: throw ValidationError("--gravity: ce or sm")
        }
        core.render = plan
        let decode: SDImageCoderOptions = [.decodeCoreOptions: core]
        let encode: SDImageCoderOptions = [.encodeCompressionQuality: Double(quality) / 100, .encodeFirstFrameOnly: true]
        // the coders manager, or serve's isolating coder (this program is its worker)
        let coders: any SDImageCoder = isolateDecoders
            ? SDImageCoreCoder(isolation: try DecoderIsolation(workers: max(1, threads)))
            : SDImageCodersManager.shared
        let encoders = SDImageCodersManager.shared
        func round() -> (seconds: Double, bytes: Int, failed: Int) {
            let next = Locked(0), bytes = Locked(0), failed = Locked(0)
            let start = DispatchTime.now().uptimeNanoseconds
            DispatchQueue.concurrentPerform(iterations: max(1, threads)) { _ in
                while true {
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    guard i < sources.count else { return }
                    guard let image = coders.decodedImage(with: sources[i], options: decode),
                          let out = encoders.encodedData(with: image, format: fmt, options: encode) else {
                        failed.withLock { $0 += 1 }
                        continue
                    }
                    bytes.withLock { $0 += out.count }
                }
            }
            return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, bytes.current, failed.current)
        }
        _ = round()  // warm up: code, caches, the codecs' tables
        let runs = (0..<max(1, rounds)).map { _ in round() }
        let rates = runs.map { Double(sources.count) / $0.seconds }.sorted()
        let median = rates[rates.count / 2]
        if json {
            print("{\"images\":\(sources.count),\"threads\":\(threads),\"box\":\(box),\"resize\":\"\(resize)\",\"gravity\":\"\(gravity)\",\"isolated\":\(isolateDecoders),\"format\":\"\(format)\","
                  + "\"shrink_margin\":\(shrinkMargin),"
                  + "\"quality\":\(quality),\"images_per_s\":\(String(format: "%.1f", median)),"
                  + "\"failed\":\(runs[0].failed),\"output_bytes\":\(runs[0].bytes)}")
        } else {
            print(String(format: "render floor: %d images%@, %@ %d g:%@, %@ q%d, shrink margin %d, %d threads: %.1f images/s (median of %d; %@)",
                         sources.count, isolateDecoders ? " (isolated decoders)" : "", resize, box, gravity, format, quality, shrinkMargin, threads, median, rates.count,
                         rates.map { String(format: "%.1f", $0) }.joined(separator: ", ")))
            if runs[0].failed > 0 { print("  \(runs[0].failed) images failed to decode or encode") }
        }
    }
}
