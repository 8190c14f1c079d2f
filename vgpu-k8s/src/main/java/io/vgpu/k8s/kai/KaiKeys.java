package io.vgpu.k8s.kai;

/**
 * The names KAI Scheduler v0.17 uses on the wire for GPU sharing, and the names vgpu adds to the pods KAI
 * shares. KAI's are fixed by KAI; vgpu's own are part of vgpu's contract with its webhook, node agent and
 * {@code libvgpu.so}.
 */
public final class KaiKeys {
  /** Pod annotation: a fraction of one card, {@code 0 < f < 1}. */
  public static final String GPU_FRACTION = "gpu-fraction";
  /** Pod annotation: MiB of one card, a positive integer without unit. */
  public static final String GPU_MEMORY = "gpu-memory";
  /** Pod annotation: how many cards the fraction is of (absent: 1). */
  public static final String GPU_FRACTION_NUM_DEVICES = "gpu-fraction-num-devices";
  /** Pod annotation: the container that gets the fraction (init containers searched first; default the first container). */
  public static final String GPU_FRACTION_CONTAINER_NAME = "gpu-fraction-container-name";
  /** Pod (or top owner) label: the queue. */
  public static final String QUEUE_LABEL = "kai.scheduler/queue";
  /** The queue of a pod that names none. */
  public static final String DEFAULT_QUEUE = "default-queue";
  /** Pod annotation the pod-grouper sets: the PodGroup the pod belongs to. */
  public static final String POD_GROUP_NAME = "pod-group-name";
  /** KAI's scheduler name. */
  public static final String SCHEDULER_NAME = "kai-scheduler";
  /** Pod annotation KAI's webhook sets: the prefix of the capabilities ConfigMaps. */
  public static final String SHARED_GPU_CONFIGMAP = "runai/shared-gpu-configmap";
  /** Pod label the binder writes: the GPU group of a one-card fraction; also on the group's reservation pod. */
  public static final String GPU_GROUP = "runai-gpu-group";
  /** Pod label prefix the binder writes for a multi-card fraction: {@code runai-gpu-group/<group>=<group>}. */
  public static final String MULTI_GPU_GROUP_PREFIX = "runai-gpu-group/";
  /** Pod annotation the binder writes: {@code Fraction} for a shared pod. */
  public static final String RECEIVED_RESOURCE_TYPE = "received-resource-type";
  /** Namespace of KAI's reservation pods. */
  public static final String RESERVATION_NAMESPACE = "kai-resource-reservation";
  /** Reservation pod annotation: the UUID of the card it holds (the name says index; the value is the UUID). */
  public static final String RESERVE_FOR_GPU_INDEX = "run.ai/reserve_for_gpu_index";
  /** BindRequest API group/version. */
  public static final String BIND_REQUEST_API_VERSION = "scheduling.run.ai/v1alpha2";
  /** Queue API group/version (cluster-scoped). */
  public static final String QUEUE_API_VERSION = "scheduling.run.ai/v2";
  /** PodGroup API group/version. */
  public static final String POD_GROUP_API_VERSION = "scheduling.run.ai/v2alpha2";
  /** Node label KAI reads for the MiB of each card (vgpu's node agent publishes it). */
  public static final String NODE_GPU_MEMORY_LABEL = "nvidia.com/gpu.memory";
  /** Node label: the card product. */
  public static final String NODE_GPU_PRODUCT_LABEL = "nvidia.com/gpu.product";
  /** Node label: the number of cards. */
  public static final String NODE_GPU_COUNT_LABEL = "nvidia.com/gpu.count";
  /** HAMi-core's env contract as KAI's hamicore plugin uses it: {@code <MiB>m} for every visible card. */
  public static final String CUDA_DEVICE_MEMORY_LIMIT = "CUDA_DEVICE_MEMORY_LIMIT";

  /**
   * vgpu's pod annotation, with {@code --kai-dialect}: why the pod waits whatever the cards, as {@code
   * <Reason>: <message>} ({@code QueueMissing}, {@code QueueLimit}, {@code GangIncomplete}). The scheduler
   * writes it when the reason changes and removes it when the pod is placed, or when a Queue or PodGroup
   * changes so that kube-scheduler tries the pod again; it is informational, never read back as input.
   */
  public static final String WAITING_ANNOTATION = "vgpu.io/waiting";
  /** vgpu's env on a fraction container: the pod's UID from {@code fieldRef metadata.uid}, for {@code subPathExpr}. */
  public static final String POD_UID_ENV = "VGPU_POD_UID";
  /** vgpu's volume: the interposer ({@code <hook>/vgpu/libvgpu.so}). */
  public static final String LIBRARY_VOLUME = "vgpu-kai-library";
  /** vgpu's volume: the preload file ({@code <hook>/vgpu/ld.so.preload}), mounted at {@code /etc/ld.so.preload}. */
  public static final String PRELOAD_VOLUME = "vgpu-kai-preload";
  /** vgpu's volume: hostPath {@code <hook>/vgpu/kai}, the node agent's grant directories; mounted read-only at {@code /etc/vgpu}. */
  public static final String GRANT_VOLUME = "vgpu-kai-grant";
  /** vgpu's volume: hostPath {@code <hook>/vgpu/containers}, per-container region directories; mounted at {@code <hook>/vgpu}. */
  public static final String REGION_VOLUME = "vgpu-kai-region";
  /** Where the grant directory is mounted in the container; {@code libvgpu.so} reads {@code limits} there. */
  public static final String CONTAINER_GRANT_DIRECTORY = "/etc/vgpu";

  private KaiKeys() {}
}
