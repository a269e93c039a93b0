// swift-tools-version:6.0
// A Swift consumer of SDWebImage for Linux, depending on this checkout by path.
import PackageDescription

let package = Package(
    name: "SDWebImageExample",
    dependencies: [
        .package(name: "sdwebimage-linux", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "sdwebimage-example",
            dependencies: [.product(name: "SDWebImage", package: "sdwebimage-linux")]
        ),
    ]
)
