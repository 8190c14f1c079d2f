package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * One pod on the lab's kubelet: admission with device allocation, init containers one by one, then the
 * app containers, restarts by the pod's restart policy, and the pod status written after every change.
 * Deleting the pod stops its containers (SIGTERM, SIGKILL after the grace period) and frees its devices.
 */
public final class PodWorker {
  /** kubelet's grace period for the lab's deletes (grace period 0 means "at once" to the API, kubelet still signals). */
  public static final Duration DELETE_GRACE = Duration.ofSeconds(2);
  private static final long BACKOFF_START_MILLIS = 500;
  private static final long BACKOFF_MAX_MILLIS = 10_000;
  /** How often a pod that waits for a volume or its configuration is tried again without a ConfigMap change. */
  private static final long RESYNC_MILLIS = 10_000;

  private final Pod pod;
  private final PodRef ref;
  private final String uid;
  private final KubeletStandIn kubelet;
  private final List<ContainerRecord> containers = new ArrayList<>();
  private final Map<String, List<ContainerSpec.Mount>> mounts = new LinkedHashMap<>();
  private final List<String> deviceIds = new ArrayList<>();
  private final Instant startTime = Instant.now();
  private volatile boolean deleted;
  private volatile boolean admitted;
  /** Set while the pod cannot proceed until something in the cluster changes (a volume, its RuntimeClass). */
  private volatile boolean blocked;
  private volatile Map<String, PodVolumes.Mounted> volumes = Map.of();
  private volatile RuntimeHandler runtime = RuntimeHandler.NVIDIA;
  private volatile String phase = "Pending";
  private volatile String reason = "";
  private volatile String message = "";

  PodWorker(Pod pod, KubeletStandIn kubelet) {
    this.pod = pod;
    this.ref = PodRefs.of(pod);
    this.uid = pod.getMetadata().getUid();
    this.kubelet = kubelet;
  }

  /** The pod as kubelet got it. */
  public Pod pod() {
    return pod;
  }

  /** kubelet's view of the pod's phase. */
  public String phase() {
    return phase;
  }

  /** The containers, init containers first, in spec order; empty until admitted. */
  public synchronized List<ContainerRecord> containers() {
    return List.copyOf(containers);
  }

  /** Whether every container that must run has started once, or the pod has ended. */
  public boolean settled() {
    if (phase.equals("Succeeded") || phase.equals("Failed")) {
      return true;
    }
    if (!admitted) {
      return false;
    }
    if (blocked) {
      return true;
    }
    for (ContainerRecord c : containers()) {
      if (!c.init() && !c.startedOnce() && !c.waitingForConfig()) {
        return false;
      }
    }
    return true;
  }

  void run() {
    try {
      if (!admit()) {
        return;
      }
      writeStatus();
      if (!prepare()) {
        return;
      }
      for (ContainerRecord c : containers()) {
        if (c.init() && !runInit(c)) {
          return;
        }
      }
      for (ContainerRecord c : containers()) {
        if (!c.init()) {
          start(c);
        }
      }
      supervise();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Sets up the pod's volumes and looks up its runtime, as kubelet does before it creates the sandbox;
   * while either fails the pod waits (an Event says why) and kubelet tries again when ConfigMaps change
   * or a while has passed.
   *
   * @return false when the pod was deleted meanwhile
   */
  private boolean prepare() throws InterruptedException {
    while (!deleted) {
      long changes = kubelet.configMapChanges();
      try {
        volumes = kubelet.volumes(pod).setUp(pod);
        runtime = kubelet.runtimeHandler(pod);
        blocked = false;
        return true;
      } catch (VolumeSetupException e) {
        blockedBy("FailedMount", e.getMessage());
      } catch (KubeletStandIn.SandboxException e) {
        blockedBy("FailedCreatePodSandBox", "Failed to create pod sandbox: " + e.getMessage());
      }
      awaitConfigMapChange(changes);
    }
    return false;
  }

  private void blockedBy(String reason, String why) {
    kubelet.events().warning(pod, reason, why);
    if (!blocked) {
      blocked = true;
      writeStatus();
    }
  }

  /** Waits until a ConfigMap changed after {@code changes}, the pod is deleted, or kubelet's resync period passed. */
  private void awaitConfigMapChange(long changes) throws InterruptedException {
    long until = System.currentTimeMillis() + RESYNC_MILLIS;
    while (!deleted && kubelet.configMapChanges() == changes && System.currentTimeMillis() < until) {
      Thread.sleep(50);
    }
  }

  private boolean admit() {
    List<Container> init = Optional.ofNullable(pod.getSpec().getInitContainers()).orElse(List.of());
    try {
      for (Container c : init) {
        admitContainer(c, true);
      }
      for (Container c : pod.getSpec().getContainers()) {
        admitContainer(c, false);
      }
      admitted = true;
      return true;
    } catch (RuntimeException e) {
      kubelet.release(deviceIds);
      phase = "Failed";
      reason = "UnexpectedAdmissionError";
      message = "Allocate failed due to " + oneLine(e) + ", which is unexpected";
      kubelet.events().warning(pod, "UnexpectedAdmissionError", message);
      writeStatus();
      return false;
    }
  }

  /**
   * Allocates the container's devices from every plugin resource it asks for. Extended resources no
   * plugin serves (gpumem, gpucores: the extender's business) are not checked, as kubelet drops
   * extended resources the node does not advertise before its admission check.
   */
  private void admitContainer(Container c, boolean init) {
    Map<String, String> env = new LinkedHashMap<>();
    List<ContainerSpec.Mount> containerMounts = new ArrayList<>();
    List<String> ids = new ArrayList<>();
    Map<String, List<String>> byResource = new LinkedHashMap<>();
    for (String resource : kubelet.deviceResources()) {
      int count = deviceCount(c, resource);
      if (count == 0) {
        continue;
      }
      KubeletStandIn.Allocation allocation = kubelet.allocate(resource, count);
      deviceIds.addAll(allocation.ids());
      ids.addAll(allocation.ids());
      byResource.put(resource, List.copyOf(allocation.ids()));
      env.putAll(allocation.response().getEnvsMap());
      allocation.response().getMountsList().forEach(m -> containerMounts.add(new ContainerSpec.Mount(m.getContainerPath(), m.getHostPath(), m.getReadOnly())));
      // Device nodes the plugin passes become the container's, as the runtime would create them; a mock
      // machine has none, so a spec whose node is missing on this host is left out.
      allocation.response().getDevicesList().stream()
          .filter(d -> Files.exists(Path.of(d.getHostPath())))
          .forEach(d -> containerMounts.add(new ContainerSpec.Mount(d.getContainerPath(), d.getHostPath(), !d.getPermissions().contains("w"))));
    }
    synchronized (this) {
      containers.add(new ContainerRecord(c.getName(), init, env, ids, byResource));
      mounts.put(c.getName(), containerMounts);
    }
  }

  private static int deviceCount(Container c, String resource) {
    if (c.getResources() == null || c.getResources().getLimits() == null) {
      return 0;
    }
    Quantity q = c.getResources().getLimits().get(resource);
    return q == null ? 0 : Quantity.getAmountInBytes(q).intValue();
  }


  private boolean runInit(ContainerRecord c) throws InterruptedException {
    long backoff = BACKOFF_START_MILLIS;
    while (!deleted) {
      long changes = kubelet.configMapChanges();
      RunningContainer running = start(c);
      if (running == null && c.waitingForConfig()) {
        awaitConfigMapChange(changes);
        continue;
      }
      if (running == null) {
        return false;
      }
      while (!running.waitFor(Duration.ofMillis(100))) {
        if (deleted) {
          return false;
        }
      }
      c.finished();
      writeStatus();
      if (running.exitCode() == 0) {
        return true;
      }
      if ("Never".equals(restartPolicy())) {
        phase = "Failed";
        writeStatus();
        return false;
      }
      Thread.sleep(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MILLIS);
    }
    return false;
  }

  private RunningContainer start(ContainerRecord c) {
    Container spec = specOf(c.name());
    KubeletStandIn.Launch launch;
    try {
      ContainerEnvironment.Resolved env = ContainerEnvironment.resolve(pod, spec, kubelet.place(), kubelet.configMaps(), kubelet.access().serviceEnvironment());
      if (!env.invalidNames().isEmpty()) {
        kubelet.events().warning(pod, "InvalidEnvironmentVariableNames",
            "Keys [" + String.join(", ", env.invalidNames()) + "] from the EnvFrom configMap were skipped since they are considered invalid environment variable names.");
      }
      List<ContainerSpec.Mount> all = new ArrayList<>(mounts.getOrDefault(c.name(), List.of()));
      all.addAll(kubelet.volumes(pod).mounts(pod, spec, env.env(), volumes));
      launch = new KubeletStandIn.Launch(env.env(), c.allocatedEnv(), all, runtime);
    } catch (ContainerConfigException e) {
      c.waiting(ContainerRecord.CONFIG_ERROR, e.getMessage());
      kubelet.events().warning(pod, "Failed", "Error: " + e.getMessage());
      writeStatus();
      return null;
    }
    try {
      if (!c.deviceIds().isEmpty()) {
        // PreStartContainer, when the plugin asks for it, before every start
        kubelet.allocatePreStart(c.deviceIds());
      }
      RunningContainer running = kubelet.runner().start(pod, c.name(), launch);
      c.started(running);
      if (!c.init()) {
        phase = "Running";
      }
      writeStatus();
      return running;
    } catch (Exception e) {
      c.waiting("CreateContainerError", oneLine(e));
      message = oneLine(e);
      kubelet.events().warning(pod, "Failed", "Error: " + message);
      writeStatus();
      return null;
    }
  }

  private String restartPolicy() {
    return Optional.ofNullable(pod.getSpec().getRestartPolicy()).orElse("Always");
  }

  private void supervise() throws InterruptedException {
    Map<String, Long> restartAt = new LinkedHashMap<>();
    Map<String, Long> backoff = new LinkedHashMap<>();
    long configTried = kubelet.configMapChanges();
    long configTriedAt = System.currentTimeMillis();
    while (!deleted) {
      boolean changed = false;
      boolean anyLive = false;
      boolean retryConfig = kubelet.configMapChanges() != configTried || System.currentTimeMillis() - configTriedAt > RESYNC_MILLIS;
      if (retryConfig) {
        configTried = kubelet.configMapChanges();
        configTriedAt = System.currentTimeMillis();
      }
      for (ContainerRecord c : containers()) {
        if (c.init()) {
          continue;
        }
        if (c.waitingForConfig()) {
          anyLive = true;
          if (retryConfig) {
            start(c);
          }
          continue;
        }
        RunningContainer running = c.current();
        if (running != null && running.alive()) {
          anyLive = true;
          continue;
        }
        if (running != null && c.finishedAt() == null) {
          c.finished();
          changed = true;
          boolean restart = switch (restartPolicy()) {
            case "Never" -> false;
            case "OnFailure" -> running.exitCode() != 0;
            default -> true;
          };
          if (restart) {
            long delay = backoff.getOrDefault(c.name(), BACKOFF_START_MILLIS);
            restartAt.put(c.name(), System.currentTimeMillis() + delay);
            backoff.put(c.name(), Math.min(delay * 2, BACKOFF_MAX_MILLIS));
          }
        }
        Long at = restartAt.get(c.name());
        if (at != null) {
          anyLive = true;
          if (System.currentTimeMillis() >= at) {
            restartAt.remove(c.name());
            start(c);
          }
        }
      }
      if (!anyLive) {
        boolean allOk = containers().stream().filter(c -> !c.init()).allMatch(c -> c.current() != null && c.current().exitCode() == 0);
        phase = allOk ? "Succeeded" : "Failed";
        writeStatus();
        return;
      }
      if (changed) {
        writeStatus();
      }
      Thread.sleep(50);
    }
  }

  /** Stops every container and frees the pod's devices (the pod was deleted, or the lab ends). */
  void delete() {
    deleted = true;
    List<ContainerRecord> all = containers();
    all.parallelStream().forEach(c -> {
      RunningContainer running = c.current();
      if (running != null) {
        running.stop(DELETE_GRACE);
      }
    });
    kubelet.release(deviceIds);
    kubelet.forget(uid, this);
  }

  /** Whether every process of the pod is gone (after a delete). */
  public boolean stopped() {
    return containers().stream().allMatch(c -> c.current() == null || !c.current().alive());
  }

  // --- Status

  private void writeStatus() {
    if (deleted) {
      return;
    }
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode status = patch.putObject("status");
    status.put("phase", phase);
    if (!reason.isEmpty()) {
      status.put("reason", reason);
    }
    if (!message.isEmpty()) {
      status.put("message", message);
    }
    status.put("hostIP", KubeletStandIn.LAB_ADDRESS);
    status.put("startTime", time(startTime));
    status.put("qosClass", QosClass.of(pod));
    List<ContainerRecord> all = containers();
    boolean initialized = all.stream().filter(ContainerRecord::init).allMatch(c -> "terminated".equals(c.state()) && c.current().exitCode() == 0);
    boolean ready = phase.equals("Running") && all.stream().filter(c -> !c.init()).allMatch(c -> "running".equals(c.state()));
    ArrayNode conditions = status.putArray("conditions");
    condition(conditions, "PodScheduled", true);
    condition(conditions, "Initialized", initialized);
    condition(conditions, "ContainersReady", ready);
    condition(conditions, "Ready", ready);
    ArrayNode initStatuses = status.putArray("initContainerStatuses");
    ArrayNode appStatuses = status.putArray("containerStatuses");
    for (ContainerRecord c : all) {
      (c.init() ? initStatuses : appStatuses).add(containerStatus(c));
    }
    try {
      kubelet.client().pods().inNamespace(ref.namespace()).withName(ref.name()).subresource("status")
          .patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    } catch (KubernetesClientException e) {
      // the pod is gone, or the next change writes it
    }
  }

  private ObjectNode containerStatus(ContainerRecord c) {
    ObjectNode s = PodJson.mapper().createObjectNode();
    s.put("name", c.name());
    Container spec = specOf(c.name());
    s.put("image", spec == null || spec.getImage() == null ? "" : spec.getImage());
    s.put("imageID", "");
    RunningContainer running = c.current();
    String state = c.state();
    s.put("ready", state.equals("running"));
    s.put("started", state.equals("running"));
    s.put("restartCount", c.restarts());
    if (running != null) {
      s.put("containerID", "containerd://" + running.id());
    }
    ObjectNode stateNode = s.putObject("state");
    switch (state) {
      case "running" -> stateNode.putObject("running").put("startedAt", time(running.startedAt()));
      case "terminated" -> {
        ObjectNode t = stateNode.putObject("terminated");
        t.put("exitCode", running.exitCode());
        if (running.signal() != 0) {
          t.put("signal", running.signal());
        }
        t.put("reason", running.exitCode() == 0 ? "Completed" : "Error");
        t.put("startedAt", time(running.startedAt()));
        t.put("finishedAt", time(c.finishedAt() == null ? Instant.now() : c.finishedAt()));
        t.put("containerID", "containerd://" + running.id());
      }
      default -> {
        ObjectNode waiting = stateNode.putObject("waiting").put("reason", c.waitingReason());
        if (!c.waitingMessage().isEmpty()) {
          waiting.put("message", c.waitingMessage());
        }
      }
    }
    return s;
  }

  private Container specOf(String name) {
    List<Container> all = new ArrayList<>(pod.getSpec().getContainers());
    Optional.ofNullable(pod.getSpec().getInitContainers()).ifPresent(all::addAll);
    return all.stream().filter(c -> c.getName().equals(name)).findFirst().orElse(null);
  }

  private static void condition(ArrayNode conditions, String type, boolean status) {
    ObjectNode c = conditions.addObject();
    c.put("type", type);
    c.put("status", status ? "True" : "False");
  }

  private static String time(Instant t) {
    return t.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  private static String oneLine(Exception e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.lines().findFirst().orElse("").trim();
  }
}
