// Array of structures: 32-byte particles, the kernel needs only two of the eight fields (mass and
// charge). Each warp-wide 4-byte field load touches 32 sectors (one per particle) and uses 8 of
// every 32 bytes brought in; a structure-of-arrays layout would read only the two needed arrays.
struct Particle {
    float x, y, z;
    float vx, vy, vz;
    float mass, charge;
};

extern "C" __global__ void particle_charge_density(const Particle* __restrict__ p, float* __restrict__ rho,
                                                   long n, float inv_volume) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) rho[i] = p[i].mass * p[i].charge * inv_volume;
}
