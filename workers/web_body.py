"""A response body for web_fetch: what kind of content it is, the bounded download (gzip and
deflate undone here, with the output bounded, so a decompression bomb stops at
`web.fetch_max_bytes` like any other long page), and its text."""

import codecs
import re
import time
import zlib
from dataclasses import dataclass

import requests
import urllib3

from workers.runtime import ToolFailure
from workers.web_transport import response_socket

CHUNK = 64 * 1024

_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/", "model/", "application/vnd.ms-",
                    "application/vnd.openxmlformats", "application/vnd.oasis.opendocument", "application/x-rar",
                    "application/x-7z", "application/x-bzip", "application/x-xz", "application/x-msdos",
                    "application/x-msdownload", "application/x-iso9660", "application/x-apple-diskimage")
_BINARY_TYPES = {"application/pdf", "application/zip", "application/gzip", "application/x-gzip",
                 "application/x-tar", "application/vnd.rar", "application/zstd", "application/x-zstd",
                 "application/octet-stream", "application/java-archive", "application/wasm", "application/msword",
                 "application/x-shockwave-flash", "application/vnd.android.package-archive",
                 "application/x-sqlite3", "application/x-executable", "application/x-sharedlib",
                 "application/x-compress", "application/x-lzma", "application/ogg", "application/epub+zip",
                 # archives, packages and executables under the other names servers give them
                 "application/x-zip", "application/x-zip-compressed", "application/x-compressed",
                 "application/x-gtar", "application/x-gtar-compressed", "application/x-cpio", "application/x-archive",
                 "application/x-lzip", "application/x-lz4", "application/x-lzh-compressed",
                 "application/x-ace-compressed", "application/x-stuffit", "application/x-xar",
                 "application/x-debian-package", "application/vnd.debian.binary-package", "application/x-rpm",
                 "application/x-redhat-package-manager", "application/x-pdf", "application/x-dosexec",
                 "application/vnd.microsoft.portable-executable", "application/x-mach-binary", "application/x-elf",
                 "application/x-font-ttf", "application/x-font-otf", "application/font-woff", "application/x-protobuf",
                 "application/vnd.apache.parquet", "application/x-hdf5", "application/x-bittorrent"}
_TEXT_TYPES = {"application/json", "application/xml", "application/javascript", "application/ecmascript",
               "application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
               "application/x-sh", "application/sql", "application/graphql", "application/x-ndjson",
               "application/jsonl", "application/rss+xml", "application/atom+xml", "image/svg+xml"}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""", re.I)
_LOOKS_HTML = re.compile(rb"<(!doctype\s+html|html|head|body)[\s>]", re.I)


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def kind_of(content_type: str) -> str:
    """"html", "text", "binary", or "unknown" (decided from the bytes after download)."""
    media = media_type(content_type)
    if media in _HTML_TYPES:
        return "html"
    if media in _TEXT_TYPES or media.startswith("text/") or media.endswith(("+json", "+xml")):
        return "text"
    if media in _BINARY_TYPES or media.startswith(_BINARY_PREFIXES):
        return "binary"
    return "unknown"


def sniff(data: bytes, declared: str) -> str:
    """The kind of a body whose type was missing or unfamiliar."""
    if b"\x00" in data[:8192]:
        return "binary"
    return "html" if declared == "unknown" and _LOOKS_HTML.search(data[:1024]) else "text"


def charset_of(content_type: str, data: bytes, is_html: bool) -> str:
    for codec, bom in (("utf-8-sig", codecs.BOM_UTF8), ("utf-16", codecs.BOM_UTF16_LE),
                       ("utf-16", codecs.BOM_UTF16_BE)):
        if data.startswith(bom):
            return codec
    candidates = [m.group(1).strip(" \"'") for m in re.finditer(r"charset\s*=\s*([^;]+)", content_type, re.I)]
    if is_html and not candidates:
        found = _META_CHARSET.search(data[:4096])
        if found:
            candidates.append(found.group(1).decode("ascii"))
    for name in candidates:
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return "utf-8"


@dataclass
class Body:
    data: bytes
    cut: bool           # the download stopped at the byte limit


class _Decoder:
    """Undoes one Content-Encoding, never producing more than it is asked for."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self.zlib = None
        if encoding in ("gzip", "x-gzip"):
            self.zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.zlib = zlib.decompressobj(zlib.MAX_WBITS)
        # "deflate" should have a zlib header, but some servers send the raw stream.
        self.may_be_raw = encoding == "deflate"
        self.pending = b""

    def feed(self, chunk: bytes, room: int) -> bytes:
        if self.zlib is None:
            return chunk[:room]
        data = self.pending + chunk
        try:
            out = self.zlib.decompress(data, room)
        except zlib.error:
            if self.may_be_raw:
                self.may_be_raw = False
                self.zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.feed(chunk, room)
            raise ToolFailure(f"the {self.encoding}-compressed body is corrupt; the server sent invalid data") from None
        if out:
            self.may_be_raw = False
        self.pending = self.zlib.unconsumed_tail
        return out

    @property
    def compressed(self) -> bool:
        return self.zlib is not None

    def has_more(self) -> bool:
        return bool(self.pending)


def read_body(response: requests.Response, limit: int, deadline: float, cancelled) -> Body:
    """Reads and decodes at most `limit` bytes of the body; stops at the deadline."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower() or "identity"
    if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
        raise ToolFailure(f"the server sent the body encoded as {encoding!r}, which web_fetch does not decode")
    decoder = _Decoder(encoding)
    raw: urllib3.HTTPResponse = response.raw
    read = getattr(raw, "read1", None) or raw.read
    sock = response_socket(response)
    parts: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolFailure("the download did not finish before the deadline (web.fetch_timeout_seconds)")
            if cancelled():
                raise ToolFailure("the call was cancelled")
            if sock is not None:
                # The connection's read timeout was the whole budget when it opened; a read that
                # blocks now must end at the deadline, not a full timeout later.
                sock.settimeout(left)
            room = limit + 1 - size         # one byte past the limit tells that the body was cut
            chunk = read(CHUNK if decoder.compressed else min(CHUNK, room), decode_content=False)
            out = decoder.feed(chunk, room)
            parts.append(out)
            size += len(out)
            while decoder.has_more() and size <= limit:
                out = decoder.feed(b"", limit + 1 - size)
                parts.append(out)
                size += len(out)
            if not chunk:
                break
    except (urllib3.exceptions.HTTPError, OSError) as err:
        if cancelled():
            raise ToolFailure("the call was cancelled") from None
        if isinstance(err, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
            raise ToolFailure("the server stopped sending before the deadline (web.fetch_timeout_seconds)") from None
        raise ToolFailure(f"the download broke off: {err}") from None
    finally:
        response.close()
    data = b"".join(parts)
    return Body(data=data[:limit], cut=size > limit)


def text_of(body: bytes, content_type: str, is_html: bool) -> str:
    return body.decode(charset_of(content_type, body, is_html), "replace")
