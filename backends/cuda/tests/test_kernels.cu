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

// Every scalar width the backend passes, written back as doubles so the host can compare.
extern "C" __global__ void scalars(double* out, double d, signed char c, short s, bool b,
                                   unsigned long long u, float f) {
  out[0] = d;
  out[1] = c;
  out[2] = s;
  out[3] = b ? 1.0 : 0.0;
  out[4] = static_cast<double>(u);
  out[5] = f;
}

// Reverses each block's slice of data through dynamic shared memory (one float per thread).
extern "C" __global__ void reverse_in_block(float* data) {
  extern __shared__ float tile[];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = data[i];
  __syncthreads();
  data[i] = tile[blockDim.x - 1 - threadIdx.x];
}

// Faults on purpose, with no tensor arguments (so it runs on device 0): the error must surface
// at the next Sync.
extern "C" __global__ void fault() { __trap(); }
