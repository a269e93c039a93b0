// swift-tools-version:6.1
// SDWebImage for Linux: the C core (CSDCore, the same CSources/ that CMake
// builds into libsdcore) and the Swift modules layered on it.
// License: MIT (LICENSE); version: include/sdcore/sd_common.h (CHANGELOG.md).
import PackageDescription

// The C libraries the core links, each a system-library target found with
// pkg-config: when one is missing, SwiftPM says which Debian package to
// install instead of failing at link time.
let cLibraries: [(target: String, pkgConfig: String, apt: String)] = [
    ("CCurl", "libcurl", "libcurl4-openssl-dev"),
    ("CJPEG", "libjpeg", "libjpeg-dev"),
    ("CPNG", "libpng16", "libpng-dev"),
    ("CGIF", "libgif", "libgif-dev"),
    ("CWebP", "libwebp", "libwebp-dev"),
    ("CWebPDemux", "libwebpdemux", "libwebp-dev"),
    ("CWebPMux", "libwebpmux", "libwebp-dev"),
    ("CAVIF", "libavif", "libavif-dev"),
    ("CLCMS", "lcms2", "liblcms2-dev"),
    ("CZlib", "zlib", "zlib1g-dev"),
]
// libheif and libjxl are not linked: the core loads them when the first
// HEIC or JPEG XL arrives (CSources/common/sd_dl.h), so a program that never
// meets one does not pay for them at start. Their headers (libheif-dev,
// libjxl-dev) are on the default include path; they are no system-library
// targets because SwiftPM links whatever such a target's pkg-config names,
// so when one is missing the codec's source says which package to install
// (an #error in CSources/decode/heic/sd_heic.c and decode/jxl/sd_jxl.c).

let package = Package(
    // The package's identity is the last part of its URL,
    // https://github.com/sdwebimage-linux/sdwebimage-linux (README, DocC).
    name: "sdwebimage-linux",
    products: [
        .library(name: "SDCoders", targets: ["SDCoders"]),
        .library(name: "SDDownloader", targets: ["SDDownloader"]),
        .library(name: "SDCache", targets: ["SDCache"]),
        .library(name: "SDWebImage", targets: ["SDWebImage"]),
        // The shared cache tier on Redis: its own product, so only programs
        // that use it link hiredis.
        .library(name: "SDWebImageRedis", targets: ["SDWebImageRedis"]),
        // SVG through librsvg (cairo, GLib): its own product, as SDWebImage
        // ships SDWebImageSVGCoder; linking it adds SVG to the coders, and
        // librsvg is loaded when the first SVG arrives (librsvg2-2 at run
        // time; nothing to build against: CSources/decode/svg/sd_rsvg_abi.h).
        .library(name: "SDWebImageSVGCoder", targets: ["SDWebImageSVGCoder"]),
        .executable(name: "sdimage", targets: ["SDImageCLI"]),
        // The desktop gallery (examples/gallery, SDL2): built here, not
        // linked by anything a package that depends on us builds.
        .executable(name: "sdgallery", targets: ["sdgallery"]),
    ],
    traits: [
        // `sdimage serve`, the thumbnail service: off by default, so no
        // library product, test bundle or sanitizer build compiles a server
        // stack; `swift build --traits Serve` (make serve, make test-serve).
        .trait(name: "Serve", description: "sdimage serve: an imgproxy-style thumbnail service (Hummingbird 2, OpenSSL's libcrypto)"),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The library logs and counts through the server-side Swift APIs only
        // (no backends): no-ops until the program bootstraps them.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.0"),
        // `make docs`: swift package generate-documentation (a plugin; nothing linked)
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.3.0"),
        // only with the Serve trait. Hummingbird's traits are named, none:
        // with its two defaults (ConfigurationSupport, FullFoundation) SwiftPM
        // 6.3 writes their -D flags in an order that changes from one run to
        // the next (a Set's), and each change rebuilt Hummingbird (~25 CPU-s,
        // five times a `make test`). We read swift-configuration ourselves,
        // and Foundation Essentials is all Hummingbird's own code needs.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
    ],
    targets: [
        .target(
            name: "CSDCore",
            dependencies: cLibraries.map { .target(name: $0.target) },
            path: ".",
            exclude: ["CSources/decode/svg"], // CSDCoreSVG's
            sources: ["CSources"],
            publicHeadersPath: "include",
            cSettings: [
                .headerSearchPath("CSources"),
                .define("_GNU_SOURCE"),
            ],
            linkerSettings: [.linkedLibrary("m"), .linkedLibrary("dl")]
        ),
        // The SVG codec row (CSources/decode/svg): a constructor plugs it into
        // the core's registry when a program links this target. It declares
        // the part of librsvg it calls itself (SwiftPM gives librsvg's
        // include paths only with its link) and loads librsvg on first use.
        .target(
            name: "CSDCoreSVG",
            dependencies: ["CSDCore"],
            path: "CSources/decode/svg",
            publicHeadersPath: ".", // no headers: the row is reached through the registry
            cSettings: [
                .headerSearchPath("../.."),
                .define("_GNU_SOURCE"),
                .define("SD_SVG_PLUG"),
                .define("SD_RSVG_OWN_ABI"),
            ]
        ),
        .target(name: "SDWebImageSVGCoder", dependencies: ["SDWebImage", "CSDCoreSVG"]),
        .target(name: "SDSync"),
        .target(name: "SDCoders", dependencies: ["CSDCore", "SDSync"]),
        // The C loop decodes on its workers, so its results carry SDCoders' Bitmap.
        .target(name: "SDDownloader", dependencies: [
            "CSDCore", "SDCoders", "SDSync",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        // The SDWebImage-named API: image type, downloader, (cache, manager).
        // Memory LRU and disk store: keys and values only, no images.
        .target(name: "CSDSystem", dependencies: ["CZlib"]),
        .target(name: "SDCache", dependencies: ["CSDSystem", "SDSync"]),
        .target(name: "SDWebImage", dependencies: [
            "CSDCore", "SDCoders", "SDDownloader", "SDCache", "SDSync",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis",
                       providers: [.apt(["libhiredis-dev"])]),
        // HMAC-SHA256 and SHA-256 for `sdimage serve` (signatures, ETags):
        // OpenSSL's libcrypto, which libcurl loads in every process anyway.
        // swift-crypto did it first; its BoringSSL (240 C files) was a
        // quarter of the debug build (~160 CPU-s) for these two functions.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .target(name: "SDWebImageRedis", dependencies: [
            "SDWebImage", "SDCache", "CSDSystem", "CHiredis", "SDSync",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `sdimage serve` (an empty module without the Serve trait)
        .target(name: "SDImageServe", dependencies: [
            "SDWebImage", "SDWebImageRedis", "SDCoders", "SDCache", "SDSync",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Serve"])),
            .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Serve"])),
            .target(name: "CLibCrypto", condition: .when(traits: ["Serve"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Serve"])),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Serve"])),
            .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Serve"])),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .executableTarget(
            name: "SDImageCLI",
            dependencies: [
                "CSDCore",
                "SDImageServe",
                .product(name: "Configuration", package: "swift-configuration", condition: .when(traits: ["Serve"])),
                .product(name: "SystemPackage", package: "swift-system", condition: .when(traits: ["Serve"])),
                "SDCache",
                "SDCoders",
                "SDDownloader",
                "SDWebImage",
                "SDWebImageRedis",
                "SDWebImageSVGCoder",
                "SDSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .systemLibrary(name: "CSDL2", path: "examples/gallery/CSDL2",
                       providers: [.apt(["libsdl2-dev"])]),
        .executableTarget(name: "sdgallery", dependencies: ["SDWebImage", "CSDL2"],
                          path: "examples/gallery/Sources/sdgallery"),
        .testTarget(name: "SDCodersTests", dependencies: ["SDCoders", "CSDCore"]),
        // Starts nginx and the fault server for the Swift test targets.
        .target(name: "SDTestSupport", dependencies: ["SDCoders", "SDDownloader", "CSDTestSHA"], path: "Tests/Support"),
        // The suite's patient downloader (Tests/Support/Patience.swift's timeouts).
        .target(name: "SDWebImageTestSupport", dependencies: ["SDWebImage", "SDTestSupport"], path: "Tests/SupportWebImage"),
        // The C tests' SHA-256, for the corpus oracles' frame hashes.
        .target(name: "CSDTestSHA", path: "Tests/SHA"),
        .testTarget(name: "SDDownloaderTests", dependencies: ["SDDownloader", "SDCoders", "SDTestSupport"]),
        // A child process for the disk-cache crash (SIGKILL) and two-process tests.
        .executableTarget(name: "SDCacheStress", dependencies: [
            "SDWebImage", "SDCache", "SDDownloader", "SDWebImageTestSupport",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ], path: "Tests/Stress"),
        // Links SDWebImageSVGCoder, so SVG decodes in the test process (one
        // binary for every test target); SDCacheStress, run as a child
        // process, does not link it.
        .testTarget(name: "SDWebImageTests", dependencies: ["SDWebImage", "SDCoders", "SDTestSupport", "SDWebImageTestSupport", "SDCacheStress",
                                                            "SDWebImageSVGCoder"]),
        .testTarget(name: "SDCacheTests", dependencies: ["SDCache"]),
        .testTarget(name: "SDWebImageRedisTests", dependencies: ["SDWebImageRedis", "SDWebImage", "SDTestSupport",
                                                                 "SDWebImageTestSupport"]),
    ],
    cLanguageStandard: .c11
)

package.targets += cLibraries.map {
    .systemLibrary(name: $0.target, path: "Sources/CSystemLibraries/\($0.target)", pkgConfig: $0.pkgConfig,
                   providers: [.apt([$0.apt])])
}
