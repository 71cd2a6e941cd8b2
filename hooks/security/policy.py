"""The security policy of the built site: one place that says what a page may load and run."""

from __future__ import annotations

from collections.abc import Iterable

# Directive → sources, in the order they are written. `script-src` gets the page's inline-script
# hashes appended. Why each line is what it is (plotly.js's inline styles, Material's data: icons and
# search worker…): hooks/security/README.md.
_DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("default-src", "'self'"),
    # 'wasm-unsafe-eval' lets the device demo compile its WebAssembly kernels; it allows no eval() or
    # Function() (that would be 'unsafe-eval', which the site never sends).
    ("script-src", "'self' 'wasm-unsafe-eval'"),
    ("style-src", "'self' 'unsafe-inline'"),
    ("img-src", "'self' data:"),
    ("font-src", "'self'"),
    ("connect-src", "'self'"),
    ("worker-src", "'self'"),
    ("object-src", "'none'"),
    ("base-uri", "'self'"),
    ("form-action", "'self'"),
    ("frame-ancestors", "'none'"),
)

# Browsers ignore these directives in a <meta> policy (Chromium says so in a console error), so a page
# cannot carry them itself: only a response header can.
HEADER_ONLY_DIRECTIVES: frozenset[str] = frozenset({"frame-ancestors", "report-uri", "sandbox"})

REFERRER_POLICY = "no-referrer"

# Sent with every response, pages and assets alike.
COMMON_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", REFERRER_POLICY),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    # Only features Chromium knows: an unknown one is reported as a console error.
    ("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), "
                           "accelerometer=(), gyroscope=(), magnetometer=(), display-capture=()"),
)


# Material names these files after a hash of their content, so a new version is a new URL: a browser
# may keep them a year without asking again. Among them is the script prefetched at load and run at
# the reader's first gesture (assets/pd/theme.js), which then comes from the cache. Other assets keep
# the host's default: their names do not change with their content.
FINGERPRINTED_ASSETS: tuple[str, ...] = (
    "/assets/stylesheets/*",
    "/assets/javascripts/bundle.*",
    "/assets/javascripts/workers/*",
)
CACHE_FOR_A_YEAR = ("Cache-Control", "public, max-age=31536000, immutable")


def content_security_policy(script_hashes: Iterable[str], *, in_meta: bool = False) -> str:
    """The CSP for a page whose inline scripts have these `'sha256-…'` hashes: the header value, or
    with `in_meta` the same policy without the directives a `<meta>` element cannot carry."""
    hashes = sorted(set(script_hashes))
    parts = []
    for directive, sources in _DIRECTIVES:
        if in_meta and directive in HEADER_ONLY_DIRECTIVES:
            continue
        if directive == "script-src" and hashes:
            sources = " ".join([sources, *hashes])
        parts.append(f"{directive} {sources}")
    return "; ".join(parts)
