"""SCV's client protocol: newline-delimited JSON-RPC 2.0 (docs/protocol.md)."""
