import CSDCore
import Foundation
import SDCoders

/// What a request may reach, for services fed untrusted URLs (SECURITY.md).
/// Off by default (`.none`); `.server` is the preset for a service. Checked
/// in the C loop for the first URL and every redirect; addresses on the
/// resolved address of every connection, reused ones included.
public struct URLPolicy: Sendable, Equatable {
    /// Address classes (`sd_address`) no connection may go to.
    public struct Addresses: OptionSet, Sendable, Hashable {
        public let rawValue: Int64
        public init(rawValue: Int64) { self.rawValue = rawValue }
        /// 127/8 and ::1.
        public static let loopback = Self(rawValue: Int64(SD_ADDRESS_LOOPBACK.rawValue))
        /// 10/8, 172.16/12, 192.168/16, carrier-grade NAT (100.64/10), 198.18/15, 192.0.0/24,
        /// IPv6 unique-local (fc00::/7), local-use NAT64 (64:ff9b:1::/48). An IPv6 address that
        /// carries an IPv4 one (mapped, NAT64, 6to4, Teredo) is in that address's class.
        public static let `private` = Self(rawValue: Int64(SD_ADDRESS_PRIVATE.rawValue))
        /// 169.254/16 (cloud metadata endpoints live here) and fe80::/10.
        public static let linkLocal = Self(rawValue: Int64(SD_ADDRESS_LINK_LOCAL.rawValue))
        /// 224/4, 240/4, 255.255.255.255 and ff00::/8.
        public static let multicast = Self(rawValue: Int64(SD_ADDRESS_MULTICAST.rawValue))
        /// 0.0.0.0/8 and ::, which many stacks route to the local host.
        public static let unspecified = Self(rawValue: Int64(SD_ADDRESS_UNSPECIFIED.rawValue))
        /// Every class that is not the public internet (the `.server` preset's choice).
        public static let nonPublic = Self(rawValue: Int64(SD_ADDRESS_NON_PUBLIC.rawValue))
    }
    /// nil: http, https and file.
    public var allowedSchemes: [String]?
    /// Patterns: "host", "*.domain", an IP literal. Non-empty: only these.
    public var allowedHosts: [String] = []
    /// Patterns refused even when `allowedHosts` would let them through.
    public var blockedHosts: [String] = []
    /// Exempt from `blockedAddresses` (an internal CDN; test servers).
    public var trustedHosts: [String] = []
    /// Address classes no connection may reach, checked on the address
    /// actually connected to (DNS rebinding cannot slip past).
    public var blockedAddresses: Addresses = []
    /// false: a redirect from https to http fails with `.refusedByPolicy`.
    public var allowsHTTPSToHTTPRedirect = true

    /// A policy from its parts; every default lets everything through.
    public init(allowedSchemes: [String]? = nil, allowedHosts: [String] = [], blockedHosts: [String] = [],
                trustedHosts: [String] = [], blockedAddresses: Addresses = [], allowsHTTPSToHTTPRedirect: Bool = true) {
        self.allowedSchemes = allowedSchemes
        self.allowedHosts = allowedHosts
        self.blockedHosts = blockedHosts
        self.trustedHosts = trustedHosts
        self.blockedAddresses = blockedAddresses
        self.allowsHTTPSToHTTPRedirect = allowsHTTPSToHTTPRedirect
    }

    /// Anything goes (the library's default, as SDWebImage).
    public static let none = URLPolicy()
    /// http and https only, no non-public address, no https -> http redirect
    /// (`sd_request_use_server_transport`'s policy; the schemes are its
    /// `SD_SERVER_SCHEMES`).
    public static let server = URLPolicy(allowedSchemes: SD_SERVER_SCHEMES.split(separator: ",").map(String.init),
                                         blockedAddresses: .nonPublic, allowsHTTPSToHTTPRedirect: false)
}
