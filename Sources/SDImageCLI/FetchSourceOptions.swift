import ArgumentParser
import Dispatch
import Foundation
import Logging
import SDWebImage
import SDWebImageRedis
#if canImport(Glibc)
import Glibc
#endif

/// `sdimage fetch`'s network options (a group of its own in --help).
struct FetchNetworkOptions: ParsableArguments {
    @Option(help: "Loads in flight (and the downloader's concurrent transfers).")
    var concurrency = 6

    @Option(help: "Connections to one host at most (default 6, as URLSession; 0: no limit).")
    var maxPerHost = 6

    @Option(help: "Retry a failed load up to N times (timeouts, lost connections, 408/429/5xx; backoff from 0.5 s).")
    var retries: Int = 0

    @Option(help: ArgumentHelp("The longest one download may take (default 120; 30 with --server-policy).", valueName: "seconds"))
    var timeout: Double?

    @Option(help: "Redirects followed at most (default 10; 3 with --server-policy; 0: none).")
    var maxRedirects: Int?

    @Option(help: "Largest response body in bytes (default 200 MiB; 20 MiB with --server-policy).")
    var maxBytes: Int?

    @Option(help: "Fetch through this proxy (http://host:port, socks5h://host:port; '' for none). Default: the environment's http_proxy/https_proxy, ignored under --server-policy, which must see each connection's address; through a proxy an IP-literal host is still judged, a name is the proxy's to police.")
    var proxy: String?

    @Flag(help: "Accept TLS certificates that do not verify.")
    var insecure = false
}

/// `sdimage fetch`'s untrusted urls options (a group of its own in --help).
struct FetchSafetyOptions: ParsableArguments {
    @Flag(help: ArgumentHelp("For untrusted URL lists: http/https only (no file), no connection to loopback, private, link-local or multicast addresses (checked on every resolved address, redirects included), no https -> http redirect, 3 redirects, 20 MiB bodies, 30 s per image, images of at most 40 megapixels, 8192 px a side and 256 MiB of codec memory.", valueName: "server-policy"))
    var serverPolicy = false

    @Option(help: "A host exempt from the address rules of --server-policy (repeatable), e.g. 127.0.0.1 for a local server.")
    var trustHost: [String] = []

    @Flag(help: "Refuse file:// URLs (on with --server-policy).")
    var noFile = false
}

/// `sdimage fetch`'s fleet (a shared redis tier) options (a group of its own in --help).
struct FetchFleetOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A shared cache tier on Redis behind the local cache (redis://[user:pass@]host:port/db): images another process or machine fetched come from there, not the origin; a Redis that is down only costs misses.", valueName: "url"))
    var redis: String?

    @Flag(help: "With --redis: one origin request per image across every process sharing that Redis (a lease in Redis; the others wait for the bytes and read them from there).")
    var fleetLock = false
}
