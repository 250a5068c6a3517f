/* The classic sequential k-means of Northwestern University (Wei-keng Liao's seq_kmeans.c),
 * kept to its arithmetic so that its results are reproduced exactly: float32 squared
 * distances, the nearest centre with ties to the lowest index, float32 sums in object order,
 * an empty cluster keeping its centre, and the loop `while (delta > threshold && loop++ < max)`.
 * Objects are row-major [numObjs][numCoords]; clusters hold the initial centres on entry (the
 * classic code takes the first numClusters objects) and the final ones on return. */

#include <stddef.h>

static float euclid_dist_2(int numdims, const float *coord1, const float *coord2)
{
    float ans = 0.0f;
    for (int i = 0; i < numdims; i++)
        ans += (coord1[i] - coord2[i]) * (coord1[i] - coord2[i]);
    return ans;
}

static int find_nearest_cluster(int numClusters, int numCoords, const float *object, const float *clusters)
{
    int index = 0;
    float min_dist = euclid_dist_2(numCoords, object, clusters);
    for (int i = 1; i < numClusters; i++) {
        float dist = euclid_dist_2(numCoords, object, clusters + (size_t)i * numCoords);
        if (dist < min_dist) {
            min_dist = dist;
            index = i;
        }
    }
    return index;
}

/* The host-side update of the classic CUDA code: sums in object order, then the average. */
void host_update(const float *objects, int numCoords, int numObjs, int numClusters, const int *membership,
                 float *clusters, float *newClusters, int *newClusterSize)
{
    for (int i = 0; i < numClusters; i++) {
        newClusterSize[i] = 0;
        for (int j = 0; j < numCoords; j++) newClusters[(size_t)i * numCoords + j] = 0.0f;
    }
    for (int i = 0; i < numObjs; i++) {
        int index = membership[i];
        newClusterSize[index]++;
        for (int j = 0; j < numCoords; j++)
            newClusters[(size_t)index * numCoords + j] += objects[(size_t)i * numCoords + j];
    }
    for (int i = 0; i < numClusters; i++)
        if (newClusterSize[i] > 0)
            for (int j = 0; j < numCoords; j++)
                clusters[(size_t)i * numCoords + j] = newClusters[(size_t)i * numCoords + j] / newClusterSize[i];
}

/* Returns the iteration count as the classic code reports it (loop + 1). */
int seq_kmeans(const float *objects, int numCoords, int numObjs, int numClusters, float threshold, int max_loop,
               float *clusters, int *membership, float *newClusters, int *newClusterSize)
{
    int loop = 0;
    float delta;
    for (int i = 0; i < numObjs; i++) membership[i] = -1;
    for (int i = 0; i < numClusters; i++) {
        newClusterSize[i] = 0;
        for (int j = 0; j < numCoords; j++) newClusters[(size_t)i * numCoords + j] = 0.0f;
    }
    do {
        delta = 0.0f;
        for (int i = 0; i < numObjs; i++) {
            const float *object = objects + (size_t)i * numCoords;
            int index = find_nearest_cluster(numClusters, numCoords, object, clusters);
            if (membership[i] != index) delta += 1.0f;
            membership[i] = index;
            newClusterSize[index]++;
            for (int j = 0; j < numCoords; j++)
                newClusters[(size_t)index * numCoords + j] += object[j];
        }
        for (int i = 0; i < numClusters; i++) {
            for (int j = 0; j < numCoords; j++) {
                if (newClusterSize[i] > 0)
                    clusters[(size_t)i * numCoords + j] = newClusters[(size_t)i * numCoords + j] / newClusterSize[i];
                newClusters[(size_t)i * numCoords + j] = 0.0f;
            }
            newClusterSize[i] = 0;
        }
        delta /= numObjs;
    } while (delta > threshold && loop++ < max_loop);
    return loop + 1;
}
