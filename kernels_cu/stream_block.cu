// Holding a stream while the host enqueues the work to be timed (the idea of nvbench's blocking
// kernel). One thread spins until the host writes a nonzero `release` flag in pinned host memory
// (mapped into the GPU's address space by unified addressing), so every launch and event the host
// enqueues behind it waits in the stream; released, they run back to back and no host dispatch
// lands between two events. The spin gives up after `timeout_ns` of %globaltimer (nanoseconds)
// and sets `timed_out`: a host that synchronizes while holding, or blocks on a full launch queue,
// can therefore never deadlock; it only learns that the work behind was not enqueued in time.
// This is the only kernel of its family (no predecessor); cudalab/core/timing.py launches it.

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void stream_block(const volatile int* release, int* timed_out, unsigned long long timeout_ns)
{
    const unsigned long long start = global_ns();
    while (*release == 0) {
        if (global_ns() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
    }
}
