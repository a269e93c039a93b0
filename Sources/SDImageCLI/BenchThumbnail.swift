import ArgumentParser
import Foundation

/// `sdimage bench thumbnail`: thumbnails against libvips in the same run —
/// speed and PSNR against an exact Lanczos-3 (`sdcore-bench thumbnail`, C,
/// linked with libvips from the bench packages); `--sheet` draws the zone
/// plate's thumbnails side by side.
struct BenchThumbnail: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Thumbnails vs libvips' vips_thumbnail: images/s and PSNR (runs sdcore-bench from the CMake build).")

    @Option(help: "Photo-like files generated (JPEG, one in four PNG), 1...300.")
    var photos = 40

    @Option(help: "Timed rounds, interleaved; the median is reported (1...5).")
    var rounds = 3

    @Option(help: "The thumbnail box, pixels.")
    var box = 256

    @Option(help: "Write a PNG of the zone plate's thumbnails (reference, ours the old way, ours, libvips) and stop.")
    var sheet: String?

    @OptionGroup var common: BenchOptions

    func run() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: benchBinaryPath(common.benchBinary))
        var args = ["thumbnail", "--photos", "\(photos)", "--rounds", "\(rounds)", "--box", "\(box)"]
        if let sheet { args += ["--sheet", sheet] }
        if common.json { args.append("--json") }
        p.arguments = args
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus != 0 { throw ExitCode(p.terminationStatus) }
    }
}
