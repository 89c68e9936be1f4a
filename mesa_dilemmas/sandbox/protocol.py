"""How the run and a sandbox worker talk: length-prefixed JSON headers and raw numpy arrays.

Nothing that crosses the pipe is ever unpickled: a worker runs untrusted code,
so everything it sends back is parsed as data and checked (dtype from a short
list, shape against byte count, total size bounded) before the run uses it.
"""

from __future__ import annotations

import json
import os
import re
import select
import struct
import time
from typing import Any

import numpy as np

#: dtypes an array in a message may have
DTYPES = {
    "bool": np.bool_,
    "int8": np.int8,
    "int32": np.int32,
    "int64": np.int64,
    "float64": np.float64,
}
_LEN = struct.Struct("<Q")
#: largest message the run accepts from a worker unless the call says how large its answer can
#: be (bytes): requests that expect arrays pass a bound computed from what they asked for
MAX_MESSAGE = 16 << 20
#: largest JSON header of a message from a worker (bytes)
MAX_HEADER = 8 << 20
#: deepest nesting of lists/objects a header may have (checked before it is parsed)
MAX_DEPTH = 16
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')


class ProtocolError(RuntimeError):
    """A message was malformed (from a worker: treated like a crashed worker)."""


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def send(fd: int, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
    """Write one message: header JSON (with the arrays' layout), then the arrays' bytes."""
    _write_all(fd, encode(header, arrays))


def encode(header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> bytes:
    """One message as bytes (what :func:`send` writes)."""
    blobs = []
    layout = []
    for name, arr in (arrays or {}).items():
        a = np.ascontiguousarray(arr)
        if a.dtype.name not in DTYPES:
            raise ProtocolError(f"array {name!r}: dtype {a.dtype} cannot be sent")
        layout.append([name, a.dtype.name, list(a.shape)])
        blobs.append(a.tobytes())
    head = json.dumps({**header, "__arrays__": layout}, separators=(",", ":")).encode()
    sizes = b"".join(_LEN.pack(len(b)) for b in (head, *blobs))
    return _LEN.pack(len(blobs)) + sizes + head + b"".join(blobs)


def depth(head: bytes) -> int:
    """How deeply the lists and objects of a JSON text nest (strings skipped), without parsing it."""
    bare = np.frombuffer(_STRINGS.sub(b"", head), dtype=np.uint8)
    if not bare.size:
        return 0
    step = np.isin(bare, (0x5B, 0x7B)).astype(np.int64) - np.isin(bare, (0x5D, 0x7D))
    return int(np.cumsum(step).max(initial=0))


#: what poll() reports for a descriptor that a read (or a write) will not block on: data, or the
#: other end gone (the read then sees EOF, the write an error)
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR
_WRITABLE = select.POLLOUT | select.POLLERR


def ready(read: list[int], write: list[int], timeout: float | None) -> tuple[list[int], list[int]]:
    """The descriptors of ``read`` and ``write`` that are ready within ``timeout`` seconds
    (``None``: wait).  ``poll`` rather than ``select``: a long-lived process (a notebook, the
    dashboard, a test worker) may hold more than 1,024 descriptors, which ``select`` refuses."""
    poller = select.poll()
    for fd in read:
        poller.register(fd, select.POLLIN)
    for fd in write:
        poller.register(fd, select.POLLOUT | (select.POLLIN if fd in read else 0))
    events = dict(poller.poll(None if timeout is None else max(0, int(timeout * 1000))))
    readable = [fd for fd in read if events.get(fd, 0) & _READABLE]
    writable = [fd for fd in write if events.get(fd, 0) & _WRITABLE]
    return readable, writable


def _read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    parts = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not ready([fd], [], left)[0]:
                raise TimeoutError("message not complete in time")
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def recv(
    fd: int,
    max_bytes: int = MAX_MESSAGE,
    deadline: float | None = None,
    max_header: int = MAX_HEADER,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read one message (by ``deadline``, a ``time.monotonic()`` value, if given), of at most
    ``max_bytes`` in all and ``max_header`` of JSON header.

    Raises ProtocolError if it is malformed or too large, EOFError if the pipe
    closed, TimeoutError if the deadline passed.
    """

    def read(n: int) -> bytes:
        return _read_exact(fd, n, deadline)

    (count,) = _LEN.unpack(read(_LEN.size))
    if count > 64:
        raise ProtocolError(f"message claims {count} arrays")
    sizes = [_LEN.unpack(read(_LEN.size))[0] for _ in range(count + 1)]
    if sum(sizes) > max_bytes:
        raise ProtocolError(f"message of {sum(sizes)} bytes exceeds the limit of {max_bytes}")
    if sizes[0] > max_header:
        raise ProtocolError(f"header of {sizes[0]} bytes exceeds the limit of {max_header}")
    head = read(sizes[0])
    if (nesting := depth(head)) > MAX_DEPTH:
        raise ProtocolError(f"header nests {nesting} deep (at most {MAX_DEPTH})")
    try:
        header = json.loads(head)
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"header is not JSON: {type(exc).__name__}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    layout = header.pop("__arrays__", None)
    if not isinstance(layout, list) or len(layout) != count:
        raise ProtocolError("array layout does not match the message")
    arrays: dict[str, np.ndarray] = {}
    for item, size in zip(layout, sizes[1:], strict=True):
        try:
            name, dtype_name, shape = item
            dtype = np.dtype(DTYPES[dtype_name])
            shape = tuple(int(s) for s in shape)
        except (KeyError, TypeError, ValueError):
            raise ProtocolError(f"bad array description {item!r}") from None
        if (
            any(s < 0 for s in shape)
            or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != size
        ):
            raise ProtocolError(f"array {name!r}: shape {shape} does not match {size} bytes")
        arrays[str(name)] = np.frombuffer(read(size), dtype=dtype).reshape(shape)
    return header, arrays
