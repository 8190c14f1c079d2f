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
 *
 * <p><b>What the node agent trusts, and why</b> ({@link KaiGrantDerivation}, {@link KaiGrantWriter}).
 * A tenant with the {@code edit} role in its namespace writes its pods' annotations, labels and env,
 * the ConfigMaps KAI's binder fills (including {@code NVIDIA_VISIBLE_DEVICES} and KAI's own {@code
 * CUDA_DEVICE_MEMORY_LIMIT}), and every file its containers can reach. None of that sets a grant:
 *
 * <ul>
 *   <li>The fraction container is the one whose mount uses volume {@link KaiKeys#GRANT_VOLUME}: vgpu's
 *       webhook sets it at CREATE and a pod's spec cannot change afterwards, unlike the {@code
 *       gpu-fraction-container-name} annotation.
 *   <li>The portion, the card count, the GPU groups and the node come from the BindRequest named after
 *       the pod, accepted only when it is owned by the pod's UID, selects this node and is of type
 *       {@code Fraction}. Only KAI's scheduler writes BindRequests (vgpu's chart adds a
 *       ValidatingAdmissionPolicy that refuses anyone else's create and update), so a tenant cannot
 *       forge or enlarge one.
 *   <li>The card of each group comes from the reservation pod in {@link KaiKeys#RESERVATION_NAMESPACE},
 *       on this node, labelled with the group: KAI's namespace, where tenants create no pods; and its
 *       card must be one of this node's, as NVML lists them.
 *   <li>The MiB of a card come from the raw {@link KaiKeys#NODE_GPU_MEMORY_LABEL} that vgpu's node agent
 *       itself publishes from NVML (tenants do not write Node labels), and never exceed what NVML
 *       reports for the card.
 * </ul>
 *
 * The capabilities ConfigMap is only compared with the grant (an Event when they differ); a tenant's
 * own {@code CUDA_DEVICE_MEMORY_LIMIT} or {@code CUDA_DISABLE_CONTROL} changes nothing, because {@code
 * libvgpu.so} prefers the limits file. Where a grant cannot be derived, nothing is written and {@code
 * libvgpu.so} refuses CUDA: a limit fails closed.
 */
@NullMarked
package io.vgpu.k8s.kai;

import org.jspecify.annotations.NullMarked;
