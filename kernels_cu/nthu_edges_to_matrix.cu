// The NTHU case's distance matrix built on the device from its edge list (lab 001's input stage).
// The host reads the file with one numpy.fromfile and sends the E x 3 edge list; the V x V matrix
// (576 MB at V = 12,000) is never touched by the host. Before this kernel the padded matrix holds
// 1073741823 ("unreachable") everywhere; after it, the diagonal is set to 0 by the caller.
//
// Changes from the host's to_matrix (numpy.minimum.at over the edges, then a copy of the whole
// matrix to the device): one thread per edge, an atomic minimum so that repeated (src, dst) pairs
// keep their lightest weight whatever order the threads run in.
// Launch: any grid (grid-stride loop), e.g. 1024 blocks of 256 threads.

extern "C" __global__ void nthu_edges_to_matrix(int* d, int n, const int* edges, long long e)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < e; t += stride) {
        int src = edges[3 * t], dst = edges[3 * t + 1], w = edges[3 * t + 2];
        atomicMin(&d[(size_t)src * n + dst], w);
    }
}
