// Kernels for the CUDA backend tests, compiled to PTX at build time. extern "C" keeps the
// names unmangled, as generated code names its kernels.

// c = alpha * a + b over the first n elements; the grid may cover more.
extern "C" __global__ void saxpy(const float* a, const float* b, float* c, float alpha, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = alpha * a[i] + b[i];
}

// out[i] = value for i < count: a 64-bit and an unsigned 32-bit scalar.
extern "C" __global__ void fill(long long* out, long long value, unsigned int count) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = value;
}
