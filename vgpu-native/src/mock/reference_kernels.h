/*
 * The reference kernels of the mock libcuda: kernels it really executes, on the host memory behind
 * device allocations, so that a program's data path (copy in, kernel, copy out) can be checked over the
 * mock. A function whose name is one of these, taken from any image (PTX text that lists it as an
 * .entry, or a binary image), is that reference kernel; every other kernel runs no code.
 *
 *   vectorAdd(const float *A, const float *B, float *C, int numElements)
 *       C[i] = A[i] + B[i] for every i < numElements reached by the grid (i = blockDim.x * blockIdx.x +
 *       threadIdx.x), as NVIDIA's vectorAdd sample. Also under its C++ name _Z9vectorAddPKfS0_Pfi.
 *   vgpu_spin(unsigned long long nanoseconds)
 *       occupies its device for exactly that many nanoseconds of the device clock (at most 1 s).
 *
 * MOCK_REFERENCE_PTX declares both as real PTX, so the same program also runs on a GPU: vgpu_spin
 * spins on %globaltimer there.
 */
#ifndef VGPU_MOCK_REFERENCE_KERNELS_H
#define VGPU_MOCK_REFERENCE_KERNELS_H

#define MOCK_VECTOR_ADD_KERNEL "vectorAdd"
#define MOCK_VECTOR_ADD_KERNEL_MANGLED "_Z9vectorAddPKfS0_Pfi"
#define MOCK_SPIN_KERNEL "vgpu_spin"
#define MOCK_SPIN_MAX_NS 1000000000ULL

#define MOCK_REFERENCE_PTX                                                                   \
    ".version 7.0\n"                                                                         \
    ".target sm_70\n"                                                                        \
    ".address_size 64\n"                                                                     \
    "\n"                                                                                     \
    ".visible .entry vectorAdd(\n"                                                           \
    "    .param .u64 vectorAdd_A,\n"                                                         \
    "    .param .u64 vectorAdd_B,\n"                                                         \
    "    .param .u64 vectorAdd_C,\n"                                                         \
    "    .param .u32 vectorAdd_numElements\n"                                                \
    ")\n"                                                                                    \
    "{\n"                                                                                    \
    "    .reg .pred %p<2>;\n"                                                                \
    "    .reg .f32 %f<4>;\n"                                                                 \
    "    .reg .b32 %r<6>;\n"                                                                 \
    "    .reg .b64 %rd<11>;\n"                                                               \
    "    ld.param.u64 %rd1, [vectorAdd_A];\n"                                                \
    "    ld.param.u64 %rd2, [vectorAdd_B];\n"                                                \
    "    ld.param.u64 %rd3, [vectorAdd_C];\n"                                                \
    "    ld.param.u32 %r2, [vectorAdd_numElements];\n"                                       \
    "    mov.u32 %r3, %ntid.x;\n"                                                            \
    "    mov.u32 %r4, %ctaid.x;\n"                                                           \
    "    mov.u32 %r5, %tid.x;\n"                                                             \
    "    mad.lo.s32 %r1, %r3, %r4, %r5;\n"                                                   \
    "    setp.ge.s32 %p1, %r1, %r2;\n"                                                       \
    "    @%p1 bra VECTOR_ADD_DONE;\n"                                                        \
    "    mul.wide.s32 %rd4, %r1, 4;\n"                                                       \
    "    cvta.to.global.u64 %rd5, %rd1;\n"                                                   \
    "    add.s64 %rd6, %rd5, %rd4;\n"                                                        \
    "    cvta.to.global.u64 %rd7, %rd2;\n"                                                   \
    "    add.s64 %rd8, %rd7, %rd4;\n"                                                        \
    "    ld.global.f32 %f1, [%rd6];\n"                                                       \
    "    ld.global.f32 %f2, [%rd8];\n"                                                       \
    "    add.f32 %f3, %f1, %f2;\n"                                                           \
    "    cvta.to.global.u64 %rd9, %rd3;\n"                                                   \
    "    add.s64 %rd10, %rd9, %rd4;\n"                                                       \
    "    st.global.f32 [%rd10], %f3;\n"                                                      \
    "VECTOR_ADD_DONE:\n"                                                                     \
    "    ret;\n"                                                                             \
    "}\n"                                                                                    \
    "\n"                                                                                     \
    ".visible .entry vgpu_spin(\n"                                                           \
    "    .param .u64 vgpu_spin_nanoseconds\n"                                                \
    ")\n"                                                                                    \
    "{\n"                                                                                    \
    "    .reg .pred %p<2>;\n"                                                                \
    "    .reg .b64 %rd<5>;\n"                                                                \
    "    ld.param.u64 %rd1, [vgpu_spin_nanoseconds];\n"                                      \
    "    mov.u64 %rd2, %globaltimer;\n"                                                      \
    "    add.u64 %rd3, %rd2, %rd1;\n"                                                        \
    "SPIN_AGAIN:\n"                                                                          \
    "    mov.u64 %rd4, %globaltimer;\n"                                                      \
    "    setp.lt.u64 %p1, %rd4, %rd3;\n"                                                     \
    "    @%p1 bra SPIN_AGAIN;\n"                                                             \
    "    ret;\n"                                                                             \
    "}\n"

#endif
