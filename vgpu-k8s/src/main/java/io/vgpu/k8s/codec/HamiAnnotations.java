package io.vgpu.k8s.codec;

/** The annotation keys of HAMi's protocol that vgpu reads and writes (NVIDIA backend). */
public final class HamiAnnotations {
  /** Pod: the node the scheduler chose (also written as a label). */
  public static final String ASSIGNED_NODE = "hami.io/vgpu-node";
  /** Pod: when the scheduler chose it, in unix seconds. */
  public static final String ASSIGNED_TIME = "hami.io/vgpu-time";
  /** Pod: the devices still to hand out; the device plugin erases each container's entry as it serves it. */
  public static final String DEVICES_TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate";
  /** Pod: the devices granted; never changed after scheduling, the source for rebuilding state. */
  public static final String DEVICES_ALLOCATED = "hami.io/vgpu-devices-allocated";
  /** Pod: {@code allocating}, {@code success} or {@code failed}. */
  public static final String BIND_PHASE = "hami.io/bind-phase";
  /** Pod: when the bind started, in unix seconds. */
  public static final String BIND_TIME = "hami.io/bind-time";
  /** Pod: the node-level policy, {@code binpack} or {@code spread}. */
  public static final String NODE_SCHEDULER_POLICY = "hami.io/node-scheduler-policy";
  /** Pod: the device-level policy. */
  public static final String GPU_SCHEDULER_POLICY = "hami.io/gpu-scheduler-policy";
  /** Pod: the device-score weights, {@code slot=1,core=1,memory=1}. */
  public static final String DEVICE_SCORING_WEIGHTS = "hami.io/device-scoring-weights";
  /** Pod: card types to use (comma list, case-insensitive substrings). */
  public static final String USE_GPU_TYPE = "nvidia.com/use-gputype";
  /** Pod: card types to avoid. */
  public static final String NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype";
  /** Pod: card UUIDs to use (comma list). */
  public static final String USE_GPU_UUID = "nvidia.com/use-gpuuuid";
  /** Pod: card UUIDs to avoid. */
  public static final String NOUSE_GPU_UUID = "nvidia.com/nouse-gpuuuid";
  /** Pod: whether all cards of a container must share a NUMA node. */
  public static final String NUMA_BIND = "nvidia.com/numa-bind";
  /** Pod: the sharing modes the pod accepts ({@code hami-core}, {@code mig}, {@code mps}). */
  public static final String VGPU_MODE = "nvidia.com/vgpu-mode";
  /** Node: the devices the device plugin registered, as JSON. */
  public static final String NODE_REGISTER = "hami.io/node-nvidia-register";
  /** Node: UUIDs of cards that take no new work. */
  public static final String DEVICE_CORDON = "hami.io/device-cordon";
  /** Node: the bind lock, {@code <RFC3339>,<namespace>,<pod>}. */
  public static final String NODE_LOCK = "hami.io/mutex.lock";

  private HamiAnnotations() {}
}
