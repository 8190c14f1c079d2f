/**
 * vgpu as the isolation layer under KAI Scheduler: KAI schedules and shares cards by fraction, vgpu
 * makes each fraction container's share real. KAI's names on the wire are in {@link KaiKeys}; the
 * mutation of the pods KAI shares, the node agent's derivation of their grant from what no tenant can
 * write, and the files that carry the grant into the container build on them.
 *
 * <p>How a fraction container gets its grant, given that kubelet never calls vgpu's Allocate for it (a
 * KAI shared pod asks for no device):
 *
 * <ol>
 *   <li>At pod CREATE, vgpu's webhook gives the fraction container (KAI's rule: {@code
 *       gpu-fraction-container-name}, init containers first, else the first container) the env {@link
 *       KaiKeys#POD_UID_ENV} from {@code fieldRef metadata.uid} (replacing any the tenant wrote) and four
 *       read-only-where-it-matters mounts: the interposer, the preload file, the node agent's grant
 *       directory at {@code /etc/vgpu} (read-only, {@code subPathExpr: $(VGPU_POD_UID)_<container>} of
 *       hostPath {@code <hook>/vgpu/kai}) and the container's writable region directory at {@code
 *       <hook>/vgpu} ({@code subPathExpr} of hostPath {@code <hook>/vgpu/containers}).
 *   <li>Once the pod is bound to its node, that node's agent derives the grant from KAI's decision
 *       (the BindRequest KAI's scheduler wrote, the card each of its GPU groups' reservation pods
 *       reported) and the raw {@code nvidia.com/gpu.memory} label, and writes the limits file {@code
 *       <hook>/vgpu/kai/<podUID>_<container>/limits}: {@code int(label × portion)} MiB on every card.
 *   <li>{@code libvgpu.so} finds {@code /etc/vgpu} present and waits a bounded time at {@code cuInit} for
 *       {@code /etc/vgpu/limits}; without it CUDA is refused with one clear line, never unlimited.
 * </ol>
 */
@NullMarked
package io.vgpu.k8s.kai;

import org.jspecify.annotations.NullMarked;
