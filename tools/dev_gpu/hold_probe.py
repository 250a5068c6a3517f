"""Why does StreamHold not hold? Probe the stream_block kernel with flags in (a) CuPy's pinned
memory, (b) device memory (only the timeout can end it), (c) cudaHostAlloc(mapped) memory."""

import time

import cupy as cp
import numpy as np

from cudalab.core.kernels import load_kernel

k = load_kernel("stream_block.cu", "stream_block")
s = cp.cuda.get_current_stream()
print("stream", s, s.ptr)


def probe(name, rel_ptr, to_ptr, read):
    a = cp.zeros(1, dtype=cp.float32)
    t0 = time.perf_counter()
    k((1,), (1,), (np.uintp(rel_ptr), np.uintp(to_ptr), np.uint64(200_000_000)), stream=s)
    a += 1
    done = cp.cuda.Event()
    done.record(s)
    time.sleep(0.02)
    held = not done.done
    done.synchronize()
    print(f"{name}: held after 20 ms: {held}; finished after {time.perf_counter() - t0:.3f} s; flags {read()}")


mem = cp.cuda.alloc_pinned_memory(8)
flags = np.frombuffer(mem, dtype=np.int32, count=2)
flags[:] = 0
print("pinned ptr", hex(mem.ptr), "numpy data ptr", hex(flags.ctypes.data))
probe("cupy pinned", mem.ptr, mem.ptr + 4, lambda: flags.tolist())
dev = cp.zeros(2, dtype=cp.int32)
probe("device flags", dev.data.ptr, dev.data.ptr + 4, lambda: dev.get().tolist())
try:
    p = cp.cuda.runtime.hostAlloc(8, 2)  # cudaHostAllocMapped
    arr = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_int32 * 2).from_address(p))
    arr[:] = 0
    probe("hostAlloc mapped", p, p + 4, lambda: arr.tolist())
except Exception as e:  # noqa: BLE001
    print("hostAlloc mapped failed:", e)
