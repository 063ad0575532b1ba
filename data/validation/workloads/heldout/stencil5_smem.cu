// 5-point Jacobi step on an nx x ny FP32 grid (clamp-to-edge). A 32x8 block stages its tile plus a
// one-cell halo in shared memory (tile[BY+2][BX+2]): the interior by every thread, the top/bottom halo
// rows by the first/last thread row, the left/right halo columns by lanes 0 and 31 of each warp.
// Every output reads its 5 inputs from shared memory (row-consecutive lanes: no bank conflicts).
#define BX 32
#define BY 8
__device__ __forceinline__ float at(const float* __restrict__ in, int x, int y, int nx, int ny) {
    x = min(max(x, 0), nx - 1);
    y = min(max(y, 0), ny - 1);
    return in[(long long)y * nx + x];
}

extern "C" __global__ void stencil5_smem(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
    __shared__ float tile[BY + 2][BX + 2];
    const int gx = blockIdx.x * BX + threadIdx.x, gy = blockIdx.y * BY + threadIdx.y;
    const int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
    tile[ly][lx] = at(in, gx, gy, nx, ny);
    if (threadIdx.y == 0) tile[0][lx] = at(in, gx, gy - 1, nx, ny);
    if (threadIdx.y == BY - 1) tile[BY + 1][lx] = at(in, gx, gy + 1, nx, ny);
    if (threadIdx.x == 0) tile[ly][0] = at(in, gx - 1, gy, nx, ny);
    if (threadIdx.x == BX - 1) tile[ly][BX + 1] = at(in, gx + 1, gy, nx, ny);
    __syncthreads();
    out[(long long)gy * nx + gx] =
        0.2f * (tile[ly][lx] + tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx]);
}
