/* The course's sequential reference (ST_APSP of the labs' MatUtil), in C.
 * mat[i*n+j] == -1 means "no edge"; the matrix is updated in place. */
#include <stddef.h>

void st_apsp(int *mat, size_t n)
{
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                size_t i0 = i * n + j, i1 = i * n + k, i2 = k * n + j;
                if (mat[i1] != -1 && mat[i2] != -1) {
                    int sum = mat[i1] + mat[i2];
                    if (mat[i0] == -1 || sum < mat[i0])
                        mat[i0] = sum;
                }
            }
}
