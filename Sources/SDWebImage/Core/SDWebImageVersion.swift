import SDCoders
import SDDownloader

/// The project's one version (C library, Swift modules, `sdimage`), from
/// `SD_VERSION_*` in `include/sdcore/sd_common.h`; `CHANGELOG.md` says what
/// changed in each.
public enum SDWebImageVersion {
    /// The major version (0 before the API is declared stable).
    public static let major = CoreVersion.headers.major
    /// The minor version: before 1.0 a new minor may change the API (the changelog says how).
    public static let minor = CoreVersion.headers.minor
    /// The patch version.
    public static let patch = CoreVersion.headers.patch
    /// "MAJOR.MINOR.PATCH", as `sdimage --version` prints it.
    public static let string = "\(major).\(minor).\(patch)"
    /// The version of the C library linked at run time (`sd_version_string`);
    /// equal to ``string`` unless another libsdcore was loaded.
    public static var linkedCoreString: String { sdCoreVersion }
}
