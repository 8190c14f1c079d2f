package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.HostPreparation;
import io.vgpu.nvidia.NvidiaContainerContract;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent's half of a KAI fraction container's grant: for every pod bound to this node that KAI
 * shares, make the container's region directory ({@code <hook>/vgpu/containers/<uid>_<name>}, mode 1777)
 * and then, once {@link KaiGrantDerivation} can derive the grant, write its limits file ({@code
 * <hook>/vgpu/kai/<uid>_<name>/limits}, 0444 in a 0755 directory, atomically). Without a grant nothing is
 * written and the pod gets one Warning Event {@value #UNAVAILABLE_REASON} naming why: libvgpu.so, which
 * waits for the file, then refuses CUDA in the container. A reason that may only mean "not yet" (no
 * BindRequest, a reservation pod missing or still looking for its card) is reported only once the pod
 * runs or the container has started.
 *
 * <p>Each container is derived once per agent life: after a restart every pod is derived again and its
 * file rewritten only when it changed. A file already there is never removed while its pod lives, even
 * when the derivation now fails (KAI's objects may be gone by then): no container loses its limit
 * across a restart. The node agent removes the files of pods that are gone.
 *
 * <p>Two cross-checks, each a Warning Event: {@value #LABEL_MISMATCH_REASON} when the node's label and
 * what NVML reports for a granted card disagree (the grant is a portion of the smaller), and
 * {@value #LIMIT_MISMATCH_REASON} when KAI's capabilities ConfigMap for the container carries a {@code
 * CUDA_DEVICE_MEMORY_LIMIT} other than the grant (vgpu's grant stands; the ConfigMap lies in the
 * tenant's namespace). Every Event is recorded once per pod, reason and message.
 */
public final class KaiGrantWriter {
  /** Event reason: no grant could be derived; the message names why. */
  public static final String UNAVAILABLE_REASON = "KaiGrantUnavailable";
  /** Event reason: KAI's capabilities ConfigMap disagrees with the grant vgpu wrote. */
  public static final String LIMIT_MISMATCH_REASON = "KaiLimitMismatch";
  /** Event reason: the node's memory label and what NVML reports for a granted card disagree. */
  public static final String LABEL_MISMATCH_REASON = "KaiGpuMemoryLabelMismatch";

  private static final Logger LOG = LoggerFactory.getLogger(KaiGrantWriter.class);
  /** KAI's BindRequest resource, named outright: no discovery round trip, and no dependency on it. */
  static final ResourceDefinitionContext BIND_REQUESTS =
      new ResourceDefinitionContext.Builder()
          .withGroup(KaiKeys.BIND_REQUEST_API_VERSION.substring(0, KaiKeys.BIND_REQUEST_API_VERSION.indexOf('/')))
          .withVersion(KaiKeys.BIND_REQUEST_API_VERSION.substring(KaiKeys.BIND_REQUEST_API_VERSION.indexOf('/') + 1))
          .withKind("BindRequest")
          .withPlural("bindrequests")
          .withNamespaced(true)
          .build();
  private static final Pattern LIMIT_LINE = Pattern.compile("CUDA_DEVICE_MEMORY_LIMIT_([0-9]{1,2})=([0-9]{1,18})m");
  private static final Pattern MIB_VALUE = Pattern.compile("([0-9]{1,18})m");

  /** Where the writer records a Warning Event on a pod; best effort, never throws. */
  @FunctionalInterface
  public interface Events {
    /** Records a Warning Event. */
    void warning(Pod pod, String reason, String message);
  }

  private final KubernetesClient client;
  private final String node;
  private final HookLayout layout;
  private final NvidiaContainerContract contract;
  private final Supplier<List<Pod>> pods;
  private final Supplier<Map<String, Long>> cards;
  private final Events events;
  /** {@code uid/container} derived (or kept) in this agent's life. */
  private final Set<String> settled = new HashSet<>();
  /** {@code uid reason message} already recorded. */
  private final Set<String> recorded = new HashSet<>();
  /** {@code uid line} of retried failures already logged. */
  private final Set<String> warned = new HashSet<>();
  /** What each settled container holds, by {@code uid/container}. */
  private final Map<String, Granted> granted = new ConcurrentHashMap<>();

  /**
   * A KAI fraction container holding a grant this agent wrote.
   *
   * @param pod its pod
   * @param container its name
   * @param devices its cards in ordinal order, each with its MiB
   */
  public record Granted(Pod pod, String container, List<DeviceGrant> devices) {
    /** Copies. */
    public Granted {
      devices = List.copyOf(devices);
    }
  }

  /** The KAI fraction containers on this node holding a grant, as of the last pass (for the node monitor). */
  public List<Granted> granted() {
    return List.copyOf(granted.values());
  }

  /**
   * A writer for {@code node}.
   *
   * @param contract the container contract (its settings give the limits file's other keys)
   * @param pods the pods bound to this node (the agent's pod cache)
   * @param cards this node's cards by UUID, each with the MiB NVML reports
   */
  public KaiGrantWriter(
      KubernetesClient client, String node, HookLayout layout, NvidiaContainerContract contract, Supplier<List<Pod>> pods, Supplier<Map<String, Long>> cards, Events events) {
    this.client = client;
    this.node = node;
    this.layout = layout;
    this.contract = contract;
    this.pods = pods;
    this.cards = cards;
    this.events = events;
  }

  /** Whether KAI shares {@code pod}: it asks for a fraction or for memory, or vgpu's webhook mounted a grant volume in it. */
  public static boolean sharedByKai(Pod pod) {
    Map<String, String> annotations = PodRefs.annotations(pod);
    if (annotations.containsKey(KaiKeys.GPU_FRACTION) || annotations.containsKey(KaiKeys.GPU_MEMORY)) {
      return true;
    }
    return pod.getSpec() != null && pod.getSpec().getVolumes() != null && pod.getSpec().getVolumes().stream().anyMatch(v -> KaiKeys.GRANT_VOLUME.equals(v.getName()));
  }

  /** One pass over the node's pods. Never throws for one pod's trouble; safe to call often. */
  public synchronized void reconcile() {
    Pass pass = new Pass();
    Set<String> live = new HashSet<>();
    for (Pod pod : pods.get()) {
      String uid = pod.getMetadata() == null ? null : pod.getMetadata().getUid();
      if (uid == null || pod.getSpec() == null || !node.equals(pod.getSpec().getNodeName()) || !sharedByKai(pod)) {
        continue;
      }
      String phase = pod.getStatus() == null ? "" : Objects.requireNonNullElse(pod.getStatus().getPhase(), "");
      if (phase.equals("Succeeded") || phase.equals("Failed")) {
        continue; // holds nothing any more: forgotten below, so no metric reports it
      }
      live.add(uid);
      try {
        reconcile(pod, uid, pass);
      } catch (RuntimeException e) {
        warnOnce(uid, "KAI grant of pod " + PodRefs.of(pod) + ": " + HttpService.oneLine(String.valueOf(e.getMessage())) + " (retried)");
      }
    }
    settled.removeIf(key -> !live.contains(key.substring(0, key.indexOf('/'))));
    granted.keySet().removeIf(key -> !live.contains(key.substring(0, key.indexOf('/'))));
    recorded.removeIf(key -> !live.contains(key.substring(0, key.indexOf(' '))));
    warned.removeIf(key -> !live.contains(key.substring(0, key.indexOf(' '))));
  }

  private void reconcile(Pod pod, String uid, Pass pass) {
    KaiGrantDerivation.FractionContainer fraction = KaiGrantDerivation.fractionContainer(pod);
    if (fraction.name() == null) {
      unavailable(pod, "no fraction container: " + fraction.problem());
      return;
    }
    String container = fraction.name();
    String key = uid + "/" + container;
    if (settled.contains(key)) {
      return;
    }
    Path limits;
    try {
      limits = Path.of(layout.kaiLimitsFile(uid, container));
      HostPreparation.shareDirectory(Path.of(layout.containerDirectory(uid, container)));
    } catch (IllegalArgumentException | IOException e) {
      warnOnce(uid, "KAI grant of pod " + PodRefs.of(pod) + " container " + container + ": " + e.getMessage() + " (retried)");
      return;
    }
    KaiGrantDerivation.Outcome outcome;
    try {
      outcome = KaiGrantDerivation.derive(pod, pass.bindRequest(pod), pass.reservationPods(), pass.memoryLabel(), node, cards.get());
    } catch (KubernetesClientException e) {
      warnOnce(uid, "KAI grant of pod " + PodRefs.of(pod) + " container " + container + ": reading KAI's objects: " + HttpService.oneLine(String.valueOf(e.getMessage())) + " (retried)");
      return;
    }
    boolean kept = Files.exists(limits, LinkOption.NOFOLLOW_LINKS);
    if (outcome instanceof KaiGrantDerivation.Refusal refusal) {
      if (kept) {
        settled.add(key);
        readBack(limits).ifPresent(devices -> granted.put(key, new Granted(pod, container, devices)));
        LOG.warn("KAI grant of pod {} container {} cannot be derived again ({}): the limits file written earlier stands", PodRefs.of(pod), container, refusal.reason());
      } else if (!refusal.pending() || started(pod, container)) {
        unavailable(pod, "container " + container + ": " + refusal.reason());
      }
      return;
    }
    KaiGrantDerivation.Grant grant = (KaiGrantDerivation.Grant) outcome;
    List<DeviceGrant> devices = new ArrayList<>();
    for (int i = 0; i < grant.cards().size(); i++) {
      devices.add(new DeviceGrant(grant.cards().get(i), "NVIDIA", (int) Math.min(Integer.MAX_VALUE, grant.mibPerCard().get(i)), 0));
    }
    try {
      boolean written = HostPreparation.writeProtected(limits, contract.kaiLimitsFile(PodRefs.of(pod), uid, container, devices));
      settled.add(key);
      granted.put(key, new Granted(pod, container, devices));
      if (written) {
        LOG.info("KAI grant of pod {} container {}: {} MiB on {} (portion {} of the {} MiB label), written to {}",
            PodRefs.of(pod), container, grant.mibPerCard(), grant.cards(), grant.portion(), grant.labelMiB(), limits);
      }
    } catch (IOException | IllegalArgumentException e) {
      warnOnce(uid, "KAI grant of pod " + PodRefs.of(pod) + " container " + container + ": writing " + limits + ": " + e.getMessage() + " (retried)");
      return;
    }
    if (!grant.labelDisagreement().isEmpty()) {
      record(pod, LABEL_MISMATCH_REASON, "container " + container + ": " + grant.labelDisagreement());
    }
    checkConfigMap(pod, fraction, grant, pass);
  }

  /** Compares KAI's {@code CUDA_DEVICE_MEMORY_LIMIT} in the container's capabilities ConfigMap with the grant. */
  private void checkConfigMap(Pod pod, KaiGrantDerivation.FractionContainer fraction, KaiGrantDerivation.Grant grant, Pass pass) {
    String prefix = PodRefs.annotations(pod).get(KaiKeys.SHARED_GPU_CONFIGMAP);
    if (prefix == null || prefix.isEmpty()) {
      return;
    }
    String name = fraction.capabilitiesConfigMap(prefix);
    ConfigMap map;
    try {
      map = pass.client.configMaps().inNamespace(pod.getMetadata().getNamespace()).withName(name).get();
    } catch (KubernetesClientException e) {
      LOG.debug("ConfigMap {}: {}", name, e.getMessage());
      return;
    }
    String value = map == null || map.getData() == null ? null : map.getData().get(KaiKeys.CUDA_DEVICE_MEMORY_LIMIT);
    if (value == null) {
      return; // KAI's hamicore plugin is off, or has not run: nothing to compare
    }
    Matcher m = MIB_VALUE.matcher(value.strip());
    long granted = grant.mibPerCard().get(0);
    boolean agrees = m.matches() && grant.mibPerCard().stream().allMatch(g -> g == Long.parseLong(m.group(1)));
    if (!agrees) {
      record(pod, LIMIT_MISMATCH_REASON, "container " + fraction.name() + ": ConfigMap " + pod.getMetadata().getNamespace() + "/" + name + " has "
          + KaiKeys.CUDA_DEVICE_MEMORY_LIMIT + "='" + value + "', vgpu granted " + granted + " MiB per card (" + grant.cards().size()
          + " card" + (grant.cards().size() == 1 ? "" : "s") + "); vgpu's grant stands");
    }
  }

  /** The cards and sizes of a limits file this agent wrote ({@code VGPU_DEVICES}, {@code CUDA_DEVICE_MEMORY_LIMIT_<i>=<MiB>m}). */
  static Optional<List<DeviceGrant>> readBack(Path limits) {
    try {
      List<String> cards = List.of();
      Map<Integer, Long> mib = new HashMap<>();
      for (String line : Files.readAllLines(limits)) {
        if (line.startsWith(NvidiaContainerContract.GRANTED_DEVICES + "=")) {
          cards = List.of(line.substring(NvidiaContainerContract.GRANTED_DEVICES.length() + 1).split(","));
        }
        Matcher m = LIMIT_LINE.matcher(line);
        if (m.matches()) {
          mib.put(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
        }
      }
      List<DeviceGrant> out = new ArrayList<>();
      for (int i = 0; i < cards.size(); i++) {
        out.add(new DeviceGrant(cards.get(i), "NVIDIA", (int) Math.min(Integer.MAX_VALUE, mib.getOrDefault(i, 0L)), 0));
      }
      return out.isEmpty() ? Optional.empty() : Optional.of(out);
    } catch (IOException | RuntimeException e) {
      LOG.debug("reading back {}: {}", limits, e.getMessage());
      return Optional.empty();
    }
  }

  /** Logs a retried failure once per pod and text: a pass every few seconds must not flood the log. */
  private void warnOnce(String uid, String line) {
    if (warned.add(uid + " " + line)) {
      LOG.warn(line);
    }
  }

  private void unavailable(Pod pod, String why) {
    record(pod, UNAVAILABLE_REASON, why + "; no limits file is written, so libvgpu.so refuses CUDA in the container");
  }

  private void record(Pod pod, String reason, String message) {
    if (recorded.add(pod.getMetadata().getUid() + " " + reason + " " + message)) {
      LOG.warn("pod {}: {}: {}", PodRefs.of(pod), reason, message);
      events.warning(pod, reason, message);
    }
  }

  /** Whether the pod runs or the container has started: a "not yet" is then an answer. */
  private static boolean started(Pod pod, String container) {
    if (pod.getStatus() == null) {
      return false;
    }
    if ("Running".equals(pod.getStatus().getPhase())) {
      return true;
    }
    List<ContainerStatus> all = new ArrayList<>(Objects.requireNonNullElse(pod.getStatus().getInitContainerStatuses(), List.of()));
    all.addAll(Objects.requireNonNullElse(pod.getStatus().getContainerStatuses(), List.of()));
    return all.stream()
        .filter(s -> container.equals(s.getName()))
        .anyMatch(s -> s.getState() != null && (s.getState().getRunning() != null || s.getState().getTerminated() != null));
  }

  /** What one pass reads from the API server, each at most once. */
  private final class Pass {
    final KubernetesClient client = KaiGrantWriter.this.client;
    private @Nullable List<Pod> reservations;
    private @Nullable String label;
    private boolean labelRead;

    @Nullable GenericKubernetesResource bindRequest(Pod pod) {
      try {
        return client.genericKubernetesResources(BIND_REQUESTS)
            .inNamespace(pod.getMetadata().getNamespace())
            .withName(pod.getMetadata().getName())
            .get();
      } catch (KubernetesClientException e) {
        if (e.getCode() == 404) {
          return null; // KAI's CRD is not installed
        }
        throw e;
      }
    }

    List<Pod> reservationPods() {
      if (reservations == null) {
        reservations = client.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).list().getItems();
      }
      return reservations;
    }

    @Nullable String memoryLabel() {
      if (!labelRead) {
        Node n = client.nodes().withName(node).get();
        label = n == null || n.getMetadata().getLabels() == null ? null : n.getMetadata().getLabels().get(KaiKeys.NODE_GPU_MEMORY_LABEL);
        labelRead = true;
      }
      return label;
    }
  }
}
