"""A tool call's risk: what it may do to the machine, which decides whether anyone is asked."""

import enum


class Risk(str, enum.Enum):
    READ_ONLY = "read_only"
    FILESYSTEM = "filesystem"
    PROCESS = "process"
    DELEGATE = "delegate"
    NETWORK = "network"
