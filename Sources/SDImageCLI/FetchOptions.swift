import ArgumentParser
import Dispatch
import Foundation
import Logging
import SDWebImage
import SDWebImageRedis
#if canImport(Glibc)
import Glibc
#endif

/// `sdimage fetch`'s cache options (a group of its own in --help).
struct FetchCacheOptions: ParsableArguments {
    @OptionGroup var cacheOptions: CacheOptions

    @Flag(help: "Do not read or write the cache.")
    var noCache = false

    @Option(help: ArgumentHelp("Decoded images kept in the memory cache, in MiB (default 64: a batch load reads each image once, so holding them all would only cost RSS; 0: none; --cold-warm-hot keeps every one).", valueName: "MiB"))
    var memoryCache = 64

    @Flag(help: "Serve cached images, then revalidate them with the server (ETag / Last-Modified).")
    var refresh = false
}

/// `sdimage fetch`'s decode options (a group of its own in --help).
struct FetchDecodeOptions: ParsableArguments {
    @Flag(help: "Progressive loading (previews while bytes arrive).")
    var progressive = false

    @Option(help: "Decode to a thumbnail no larger than PX on its longest side.")
    var thumbnail: Int?

    @Flag(help: "With --thumbnail: read whole files (a progressive JPEG's transfer otherwise ends once the thumbnail is settled).")
    var wholeFile = false

    @Option(help: ArgumentHelp("With --thumbnail: how many levels the scans not fetched may still move a thumbnail's samples by (default 1; 0: not at all).", valueName: "levels"))
    var settleLevels: Int?

    @Flag(help: "Decode in sandboxed worker processes (seccomp, Landlock; CPU, time and memory limits per decode): for untrusted URL lists.")
    var isolateDecoders = false

    @Option(help: ArgumentHelp("With --isolate-decoders: CPU time one decode may use (default 2000).", valueName: "ms"))
    var decodeCpuMs: Int?

    @Option(help: "The filter for thumbnails and scaled-down images: lanczos3 (default), mitchell, catmull-rom, bilinear, box.")
    var filter: String?

    @Option(help: "Images of more source pixels (width x height) fail, fetched or read from the cache (default 268435456; 40000000 with --server-policy); so for the two below.")
    var maxPixels: Int?

    @Option(help: "Images wider or taller than PX fail (default 65535; 8192 with --server-policy).")
    var maxDimension: Int?

    @Option(help: ArgumentHelp("Codec working memory one decode may use, e.g. a progressive JPEG's coefficients (default 1024; 256 with --server-policy).", valueName: "MiB"))
    var maxCodecMemory: Int?

    @Option(help: ArgumentHelp("Memory all decodes in flight share (canvases and codec memory); a decode that does not fit fails at once (default: half the machine's or cgroup's memory).", valueName: "MiB"))
    var decodeBudget: Int?
}

/// `sdimage fetch`'s output options (a group of its own in --help).
struct FetchOutputOptions: ParsableArguments {
    @Option(help: "Write every decoded image as PNG into this folder.")
    var out: String?

    @Option(help: "Write a PNG contact sheet of every image loaded.")
    var contactSheet: String?

    @Flag(help: "Machine-readable summary on stdout.")
    var json = false

    @Flag(help: "Load the list three times: as cached, from disk, from memory; summaries side by side.")
    var coldWarmHot = false
}
