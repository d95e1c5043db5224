"""The pages the supervisor shares with its workers (``runtime.process.pages``): the node
page is the supervisor's to write; no mapping of it a worker can make is writable."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os

import pytest

from notebook_kit.runtime.process.pages import COMMITTED, INLINE, Page, attach

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
_LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def test_a_worker_reads_the_node_page_and_can_make_no_writable_mapping_of_it() -> None:
    node = Page("test-node", worker_writes=False)
    try:
        seen = attach(os.dup(node.fd), writable=False)
        node.words[COMMITTED] = 41
        assert seen[COMMITTED] == 41  # the supervisor's writes are read at once
        with pytest.raises(PermissionError):
            attach(os.dup(node.fd), writable=True)
        with pytest.raises(PermissionError):
            os.pwrite(node.fd, b"\x00" * 8, 0)
        reopened = os.open(f"/proc/self/fd/{node.fd}", os.O_RDWR)  # another way in
        with pytest.raises(PermissionError):
            mmap.mmap(reopened, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_WRITE)
        os.close(reopened)
        # a read-only mapping cannot be made writable afterwards either
        address = _LIBC.mmap(None, mmap.PAGESIZE, mmap.PROT_READ, mmap.MAP_SHARED, node.fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value)
        assert _LIBC.mprotect(address, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_WRITE) == -1
        assert ctypes.get_errno() == errno.EACCES
        assert seen[COMMITTED] == 41
    finally:
        node.close()


def test_a_workers_own_page_is_written_by_the_worker_and_read_by_the_supervisor() -> None:
    page = Page("test-worker", worker_writes=True)
    try:
        mine = attach(os.dup(page.fd), writable=True)
        mine[INLINE] = 7
        assert page.words[INLINE] == 7
        with pytest.raises(OSError):
            os.ftruncate(page.fd, 0)  # its size is sealed: no SIGBUS for the reader
    finally:
        page.close()
