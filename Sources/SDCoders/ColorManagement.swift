import CSDCore

/// What the decoder does with an image's colours (`SD_DEC_COLOR_MANAGE`).
public enum ColorManagement: Sendable, Hashable {
    /// Convert to sRGB (the default): an embedded ICC profile, PNG's
    /// cHRM/gAMA or AVIF's coded primaries are honoured with lcms2 (relative
    /// colorimetric), as SDWebImage gets from ImageIO and browsers do.
    case convertToSRGB
    /// Leave the pixels as stored; the profile is in `DecodedImage.iccProfile`
    /// for a program that manages colour itself.
    case keepSource
}

/// Where a decoded image's colours came from (`SD_DEC_INFO_COLOR_SPACE`).
public enum SourceColorSpace: Int, Sendable, Hashable {
    /// Untagged, or tagged sRGB (recognised by the profile's content).
    case sRGB = 0
    /// An embedded ICC profile (RGB or gray).
    case iccProfile = 1
    /// Coded primaries and transfer (AVIF nclx, PNG cICP).
    case cicp = 2
    /// PNG cHRM and/or gAMA.
    case chromaticitiesAndGamma = 3
    /// A CMYK JPEG: converted with its CMYK profile, else inverted CMYK as browsers do.
    case cmyk = 4
    /// A PQ or HLG transfer: reported, not tone-mapped.
    case hdr = 5
}
