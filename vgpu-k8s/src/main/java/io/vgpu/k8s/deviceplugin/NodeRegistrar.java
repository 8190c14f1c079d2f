package io.vgpu.k8s.deviceplugin;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.Device;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.SharingConfig;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.pod.PodJson;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import tools.jackson.databind.node.ObjectNode;

/**
 * Tells the cluster which GPUs this node has: the {@code hami.io/node-nvidia-register} annotation the
 * scheduler reads (patched only when it changes, as HAMi does), and the labels other schedulers and
 * autoscalers need ({@code nvidia.com/gpu.product}, {@code nvidia.com/gpu.memory}, {@code
 * nvidia.com/gpu.count}). The same pass refreshes what kubelet is told, so health reaches both; a
 * {@linkplain DeviceSource#lostDevices() lost} device leaves both.
 */
public final class NodeRegistrar {
  /** Label: the GPU product, as a valid label value (e.g. {@code NVIDIA-A100-SXM4-40GB}). */
  public static final String PRODUCT_LABEL = "nvidia.com/gpu.product";

  /** Label: the memory of one GPU in MiB. */
  public static final String MEMORY_LABEL = "nvidia.com/gpu.memory";

  /** Label: the number of GPUs. */
  public static final String COUNT_LABEL = "nvidia.com/gpu.count";

  private final KubernetesClient client;
  private final String nodeName;
  private final DeviceSource source;
  private final DeviceRegistrar registrar;
  private final SharingConfig sharing;
  private final AdvertisedDevices advertised;

  /** A registrar for this node's devices under its sharing configuration. */
  public NodeRegistrar(
      KubernetesClient client, String nodeName, DeviceSource source, DeviceRegistrar registrar, SharingConfig sharing, AdvertisedDevices advertised) {
    this.client = client;
    this.nodeName = nodeName;
    this.source = source;
    this.registrar = registrar;
    this.sharing = sharing;
    this.advertised = advertised;
  }

  /**
   * One pass: read the devices, update what kubelet sees, and patch the node when its annotation or
   * labels differ.
   *
   * @return whether the node was patched
   */
  public boolean register() {
    // A GPU that fell off the bus is gone, not merely unhealthy: neither kubelet nor the scheduler sees it.
    Set<String> lost = source.lostDevices();
    List<Device> devices = source.devices().stream().filter(d -> !lost.contains(d.uuid())).toList();
    List<SchedulableDevice> registered = registrar.register(devices, sharing);
    advertised.update(registered);
    Node node = client.nodes().withName(nodeName).get();
    if (node == null) {
      throw new IllegalStateException("node " + nodeName + " does not exist");
    }
    Map<String, String> annotations = new LinkedHashMap<>();
    annotations.put(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(registered));
    Map<String, String> labels = labels(devices);
    if (unchanged(node.getMetadata().getAnnotations(), annotations) && unchanged(node.getMetadata().getLabels(), labels)) {
      return false;
    }
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode metadata = patch.putObject("metadata");
    annotations.forEach(metadata.putObject("annotations")::put);
    ObjectNode labelPatch = metadata.putObject("labels");
    labels.forEach(labelPatch::put);
    client.nodes().withName(nodeName).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    return true;
  }

  /** The labels for a node's devices (by its first device's model and memory). */
  static Map<String, String> labels(List<Device> devices) {
    Map<String, String> labels = new LinkedHashMap<>();
    if (devices.isEmpty()) {
      return labels;
    }
    Device first = devices.get(0);
    labels.put(PRODUCT_LABEL, labelValue(first.model()));
    labels.put(MEMORY_LABEL, Long.toString(first.memoryMiB()));
    labels.put(COUNT_LABEL, Integer.toString(devices.size()));
    return labels;
  }

  /**
   * A Kubernetes label value for a product name: characters outside {@code [A-Za-z0-9._-]} become
   * dashes, runs of dashes collapse, the value starts and ends alphanumeric and keeps 63 characters.
   */
  static String labelValue(String model) {
    String v = model.replaceAll("[^A-Za-z0-9._-]", "-").replaceAll("-{2,}", "-");
    v = v.replaceAll("^[^A-Za-z0-9]+", "");
    if (v.length() > 63) {
      v = v.substring(0, 63);
    }
    return v.replaceAll("[^A-Za-z0-9]+$", "");
  }

  private static boolean unchanged(Map<String, String> current, Map<String, String> wanted) {
    for (Map.Entry<String, String> e : wanted.entrySet()) {
      if (current == null || !Objects.equals(current.get(e.getKey()), e.getValue())) {
        return false;
      }
    }
    return true;
  }
}
