import CSDCore

/// The C core's version: the headers this module was built with
/// (`SD_VERSION_*`) and the library linked at run time.
package enum CoreVersion {
    /// `SD_VERSION_MAJOR`, `_MINOR`, `_PATCH` of the headers.
    package static let headers = (major: Int(SD_VERSION_MAJOR), minor: Int(SD_VERSION_MINOR), patch: Int(SD_VERSION_PATCH))
    /// `sd_version_string()` of the library linked.
    package static var linked: String { String(cString: sd_version_string()) }
}
