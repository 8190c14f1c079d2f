package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.admission.JsonPatchDiff;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.nvidia.HookLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The admission webhook's decision for a pod under KAI Scheduler ({@code vgpu scheduler --stack kai}),
 * as a pure function of the pod and the hook path: a pod KAI shares (annotation {@link
 * KaiKeys#GPU_FRACTION} or {@link KaiKeys#GPU_MEMORY}, whatever their values: KAI validates them, and an
 * odd value must never cost the pod its isolation) gets, on its fraction container ({@link
 * FractionContainer}), what {@code libvgpu.so} needs to load in every process and find the grant the node
 * agent writes:
 *
 * <ul>
 *   <li>env {@link KaiKeys#POD_UID_ENV} from {@code fieldRef metadata.uid}, replacing every entry of that
 *       name the pod came with (an explicit env entry also wins over any {@code envFrom} key);
 *   <li>hostPath volumes {@code <hook>/vgpu/libvgpu.so} (File), {@code <hook>/vgpu/ld.so.preload} (File),
 *       {@code <hook>/vgpu/kai} (Directory) and {@code <hook>/vgpu/containers} (Directory), named as in
 *       {@link KaiKeys};
 *   <li>mounts: the library read-only at its own path, the preload file read-only at {@code
 *       /etc/ld.so.preload}, the grant directory read-only at {@code /etc/vgpu} and the region directory
 *       read-write at {@code <hook>/vgpu}, the last two with {@code subPathExpr: $(VGPU_POD_UID)_<container>}.
 * </ul>
 *
 * <p>Denied, with one line naming the container, field and value: a fraction container name that names no
 * container; a tenant volume named like one of vgpu's, or a mount of one of vgpu's volumes anywhere but
 * vgpu's own mounts on the fraction container (such a mount would see every container's grant or region,
 * without the {@code subPathExpr}); a tenant mount on the fraction container at, or under, one of vgpu's
 * mount paths (it would cover the grant or the preload file); a privileged container in the pod (it can
 * unmount what isolates it). A pod already mutated (the API server reinvokes webhooks) gets an empty
 * patch. Other pods, KAI's whole-card pods and reservation pods among them, are allowed unchanged: vgpu's
 * rules for its own vGPU resources (no {@code spec.nodeName}, the node lock) do not apply to them.
 */
public final class KaiPodMutation {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private final HookLayout layout;

  /** A mutation for the interposer's files under {@code layout}'s hook path (the node agent's). */
  public KaiPodMutation(HookLayout layout) {
    this.layout = Objects.requireNonNull(layout, "layout");
  }

  /** Whether KAI shares this pod: it carries {@code gpu-fraction} or {@code gpu-memory}, with any value. */
  public static boolean isShared(Pod pod) {
    Map<String, String> annotations = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
    return annotations != null && (annotations.containsKey(KaiKeys.GPU_FRACTION) || annotations.containsKey(KaiKeys.GPU_MEMORY));
  }

  /**
   * Decides on a pod.
   *
   * @param submitted the pod as submitted; not modified
   */
  public AdmissionResult admit(Pod submitted) {
    if (submitted.getSpec() == null || submitted.getSpec().getContainers() == null || submitted.getSpec().getContainers().isEmpty()) {
      return AdmissionResult.denied("pod has no containers");
    }
    JsonNode before = PodJson.toTree(submitted);
    if (!isShared(submitted)) {
      return new AdmissionResult(true, "pod is not shared by KAI (no " + KaiKeys.GPU_FRACTION + " or " + KaiKeys.GPU_MEMORY + " annotation)",
          Optional.of(PodJson.copy(submitted)), NODES.arrayNode(), false, List.of());
    }
    FractionContainer fraction;
    try {
      fraction = FractionContainer.of(submitted);
    } catch (IllegalArgumentException e) {
      return AdmissionResult.denied(e.getMessage());
    }
    ObjectNode pod = (ObjectNode) before.deepCopy();
    ObjectNode spec = (ObjectNode) pod.get("spec");
    Optional<String> refused = privileged(spec).or(() -> collision(spec, fraction));
    if (refused.isPresent()) {
      return AdmissionResult.denied(refused.get());
    }
    ObjectNode container = (ObjectNode) spec.get(fraction.list()).get(fraction.index());
    setPodUidEnv(container);
    ArrayNode volumes = array(spec, "volumes");
    for (ObjectNode volume : volumes()) {
      if (!contains(volumes, volume)) {
        volumes.add(volume);
      }
    }
    ArrayNode mounts = array(container, "volumeMounts");
    for (ObjectNode mount : mounts(fraction.name())) {
      if (!contains(mounts, mount)) {
        mounts.add(mount);
      }
    }
    return new AdmissionResult(true, "", Optional.of(PodJson.fromTree(pod)), JsonPatchDiff.diff(before, pod), true, List.of());
  }

  // --- What vgpu adds

  /** vgpu's four volumes, in the order they are added. */
  List<ObjectNode> volumes() {
    return List.of(
        hostPath(KaiKeys.LIBRARY_VOLUME, layout.library(), "File"),
        hostPath(KaiKeys.PRELOAD_VOLUME, layout.preloadFile(), "File"),
        hostPath(KaiKeys.GRANT_VOLUME, layout.kaiGrantsDirectory(), "Directory"),
        hostPath(KaiKeys.REGION_VOLUME, layout.containersDirectory(), "Directory"));
  }

  /** vgpu's four mounts on the fraction container, in the order they are added. */
  List<ObjectNode> mounts(String container) {
    String perContainer = "$(" + KaiKeys.POD_UID_ENV + ")_" + container;
    ObjectNode library = mount(KaiKeys.LIBRARY_VOLUME, layout.library());
    library.put("readOnly", true);
    ObjectNode preload = mount(KaiKeys.PRELOAD_VOLUME, HookLayout.CONTAINER_PRELOAD_FILE);
    preload.put("readOnly", true);
    ObjectNode grant = mount(KaiKeys.GRANT_VOLUME, KaiKeys.CONTAINER_GRANT_DIRECTORY);
    grant.put("readOnly", true);
    grant.put("subPathExpr", perContainer);
    ObjectNode region = mount(KaiKeys.REGION_VOLUME, layout.vgpuDirectory());
    region.put("subPathExpr", perContainer);
    return List.of(library, preload, grant, region);
  }

  /** The env entry {@code VGPU_POD_UID} from the pod's UID; {@code apiVersion} as the API server defaults it. */
  static ObjectNode podUidEnv() {
    ObjectNode env = NODES.objectNode();
    env.put("name", KaiKeys.POD_UID_ENV);
    ObjectNode fieldRef = env.putObject("valueFrom").putObject("fieldRef");
    fieldRef.put("apiVersion", "v1");
    fieldRef.put("fieldPath", "metadata.uid");
    return env;
  }

  private static ObjectNode hostPath(String name, String path, String type) {
    ObjectNode volume = NODES.objectNode();
    volume.put("name", name);
    ObjectNode hostPath = volume.putObject("hostPath");
    hostPath.put("path", path);
    hostPath.put("type", type);
    return volume;
  }

  private static ObjectNode mount(String volume, String path) {
    ObjectNode mount = NODES.objectNode();
    mount.put("mountPath", path);
    mount.put("name", volume);
    return mount;
  }

  /** Leaves exactly one {@code VGPU_POD_UID} entry, vgpu's: in place when it is the only one, else appended. */
  private static void setPodUidEnv(ObjectNode container) {
    ArrayNode env = array(container, "env");
    ObjectNode ours = podUidEnv();
    List<Integer> named = new ArrayList<>();
    for (int i = 0; i < env.size(); i++) {
      if (KaiKeys.POD_UID_ENV.equals(env.get(i).path("name").asString(""))) {
        named.add(i);
      }
    }
    if (named.size() == 1 && env.get(named.get(0)).equals(ours)) {
      return;
    }
    for (int i = named.size() - 1; i >= 0; i--) {
      env.remove((int) named.get(i));
    }
    env.add(ours);
  }

  // --- Refusals

  private static Optional<String> privileged(ObjectNode spec) {
    for (String list : List.of("initContainers", "containers", "ephemeralContainers")) {
      for (JsonNode c : spec.path(list)) {
        if (c.path("securityContext").path("privileged").asBoolean(false)) {
          return Optional.of("container " + c.path("name").asString("") + ": securityContext.privileged is true: a privileged container of a pod KAI shares could unmount vgpu's limits");
        }
      }
    }
    return Optional.empty();
  }

  /** The first tenant volume or mount that would take the place of, or see past, one of vgpu's. */
  private Optional<String> collision(ObjectNode spec, FractionContainer fraction) {
    List<ObjectNode> ours = volumes();
    for (JsonNode volume : spec.path("volumes")) {
      String name = volume.path("name").asString("");
      for (ObjectNode own : ours) {
        if (own.path("name").asString().equals(name) && !own.equals(volume)) {
          return Optional.of("spec.volumes name " + name + ": the name is vgpu's, and this volume is not vgpu's");
        }
      }
    }
    List<ObjectNode> ownMounts = mounts(fraction.name());
    List<String> reserved = List.of(layout.library(), HookLayout.CONTAINER_PRELOAD_FILE, KaiKeys.CONTAINER_GRANT_DIRECTORY, layout.vgpuDirectory());
    for (String list : List.of("initContainers", "containers", "ephemeralContainers")) {
      JsonNode containers = spec.path(list);
      for (int i = 0; i < containers.size(); i++) {
        JsonNode c = containers.get(i);
        String name = c.path("name").asString("");
        boolean isFraction = list.equals(fraction.list()) && i == fraction.index();
        for (JsonNode m : c.path("volumeMounts")) {
          if (isFraction && ownMounts.contains(m)) {
            continue;
          }
          String volume = m.path("name").asString("");
          if (ours.stream().anyMatch(v -> v.path("name").asString().equals(volume))) {
            return Optional.of("container " + name + ": volumeMounts name " + volume + " is vgpu's volume, mounted only by vgpu on the fraction container");
          }
          if (!isFraction) {
            continue;
          }
          String path = normalize(m.path("mountPath").asString(""));
          for (String own : reserved) {
            if (path.equals(own) || path.startsWith(own + "/")) {
              return Optional.of("container " + name + ": volumeMounts mountPath " + m.path("mountPath").asString("") + " is vgpu's (" + own + ")");
            }
          }
        }
      }
    }
    return Optional.empty();
  }

  /** A container path as the runtime resolves it: repeated and trailing slashes, {@code .} and {@code ..} removed. */
  static String normalize(String path) {
    List<String> parts = new ArrayList<>();
    for (String part : path.split("/")) {
      if (part.isEmpty() || part.equals(".")) {
        continue;
      }
      if (part.equals("..")) {
        if (!parts.isEmpty()) {
          parts.remove(parts.size() - 1);
        }
        continue;
      }
      parts.add(part);
    }
    return "/" + String.join("/", parts);
  }

  private static boolean contains(ArrayNode array, ObjectNode element) {
    for (JsonNode e : array) {
      if (e.equals(element)) {
        return true;
      }
    }
    return false;
  }

  private static ArrayNode array(ObjectNode parent, String field) {
    JsonNode existing = parent.get(field);
    if (existing instanceof ArrayNode a) {
      return a;
    }
    return parent.putArray(field);
  }
}
